#!/bin/bash
# tests/integration/test_run_opencl.sh: `tunetop run --target opencl` runs networks on the
# OpenCL device (PoCL here) at small sizes and matches the independent reference: ResNet-18
# (conv2d, dense on the device; batch-norm, pools, residual adds on the host) and BERT
# (dense on the device, batch_matmul, which has no GPU template, on the host in C).
# Skips (77) without an OpenCL device. test_run_networks runs every network on the cpu.
source "$(dirname "$0")/lib.sh"
need_opencl

declare -A SIZE=([resnet-18]="--image-size 32" [bert-base]="--seq-len 8 --batch-size 2")
NETS="resnet-18 bert-base"
LOG=$WORK/ocl.log
args=()
for net in $NETS; do
  # shellcheck disable=SC2086
  key=$("$TT" tasks --network "$net" ${SIZE[$net]} | awk '$1 == "0" { print $NF; exit }')
  args+=(--task "$key")
done
# the timeouts bound a hang, they do not time PoCL: its compiles are slow on a loaded machine
if "$TT" tune --target opencl "${args[@]}" --trials 2 --build-timeout 600 --timeout 600 --headless --log "$LOG" \
  >"$WORK/tune.out" 2>&1; then
  ok "tuned one task of each network on opencl"
else
  fail "tune: $(tail -n 3 "$WORK/tune.out")"
fi

for net in $NETS; do
  # shellcheck disable=SC2086
  if "$TT" run --network "$net" ${SIZE[$net]} --target opencl --log "$LOG" --repeat 1 >"$WORK/run.out" 2>"$WORK/run.err" &&
     grep -q "output matches the reference" "$WORK/run.out" && grep -q "built for opencl" "$WORK/run.out"; then
    ok "run $net on opencl: $(grep -m1 'built for' "$WORK/run.out")"
  else
    fail "run $net on opencl: $(cat "$WORK/run.out" "$WORK/run.err" | tail -n 4)"
  fi
done
grep -q "batch_matmul.*no opencl template: it runs on the host" "$WORK/run.err" &&
  ok "batch_matmul runs on the host: $(grep -m1 'on the host' "$WORK/run.err")" ||
  fail "no host warning for batch_matmul: $(head -n 3 "$WORK/run.err")"
finish
