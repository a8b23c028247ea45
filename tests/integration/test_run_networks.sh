#!/bin/bash
# tests/integration/test_run_networks.sh: `tunetop run` builds every built-in
# network at a small size with a log's configs, and its output matches the
# independent reference; one operator with --task; bad input.
# The log: one short session tuning the first task of every network (the
# other tasks use their template's default config, with a warning).
source "$(dirname "$0")/lib.sh"

declare -A SIZE=([resnet-18]="--image-size 32" [resnet-34]="--image-size 32" [resnet-50]="--image-size 32"
  [resnet-101]="--image-size 32" [resnet-152]="--image-size 32" [mobilenet]="--image-size 32"
  [mobilenet-v2]="--image-size 32" [squeezenet-1.1]="--image-size 32" [vgg-16]="--image-size 32"
  [inception-v3]="--image-size 75" [bert-base]="--seq-len 8 --batch-size 2")
NETS="resnet-18 resnet-34 resnet-50 resnet-101 resnet-152 mobilenet mobilenet-v2 squeezenet-1.1 vgg-16 inception-v3 bert-base"
# The sanitizer build checks tunetop's own code (plans, program text, reference): four networks
# have every op kind and plan shape (residual, pools, depthwise + clip, concat, attention); the
# generated programs are plain cc builds either way, and the release pass runs all eleven.
if grep -qE '^TT_SANITIZE:[A-Z]+=.+' "${TT_BINARY_DIR:-/nonexistent}/CMakeCache.txt" 2>/dev/null; then
  NETS="resnet-18 mobilenet-v2 inception-v3 bert-base"
  echo "sanitizer build: networks $NETS"
fi

LOG=$WORK/nets.log
args=()
for net in $NETS; do
  # shellcheck disable=SC2086
  key=$("$TT" tasks --network "$net" ${SIZE[$net]} | awk '$1 == "0" { print $NF; exit }')
  args+=(--task "$key")
done
# and resnet-18 at 40, where the stem has its max pooling (the layout check below)
args+=(--task "$("$TT" tasks --network resnet-18 --image-size 40 | awk '$1 == "0" { print $NF; exit }')")
# a 3x3 stride-1 conv2d (resnet-18's stem at 32x32) is two tasks, direct and Winograd: two trials per spec
# give every task its first round
if "$TT" tune "${args[@]}" --trials ${#args[@]} --headless --log "$LOG" >"$WORK/tune.out" 2>&1; then
  ok "tuned one task of each network"
else
  fail "tune: $(tail -n 3 "$WORK/tune.out")"
fi

for net in $NETS; do
  # shellcheck disable=SC2086
  if "$TT" run --network "$net" ${SIZE[$net]} --log "$LOG" --repeat 2 >"$WORK/run.out" 2>"$WORK/run.err" &&
     grep -q "output matches the reference" "$WORK/run.out" &&
     grep -q "mean (ms)  *median (ms)  *max (ms)  *min (ms)  *std (ms)" "$WORK/run.out" &&
     grep -q "Tuner's estimate" "$WORK/run.out"; then
    ok "run $net: $(grep -m1 'built for' "$WORK/run.out")"
  else
    fail "run $net: $(cat "$WORK/run.out" "$WORK/run.err" | tail -n 4)"
  fi
done

# the layout: in ResNet the tensors stay blocked from kernel to kernel through batch-norm + ReLU,
# the residual adds and max pooling (no blocked -> NCHW step); --no-chain goes through NCHW
# between ops and gives the same output
if "$TT" run --network resnet-18 --image-size 40 --log "$LOG" --repeat 1 --profile >"$WORK/prof.out" 2>&1 &&
   grep -q "output matches the reference" "$WORK/prof.out" && grep -q "max_pool2d" "$WORK/prof.out" &&
   ! grep -q "blocked->NCHW" "$WORK/prof.out" && grep -qE "\(([1-9][0-9]*) tensors kept blocked" "$WORK/prof.out"; then
  ok "resnet-18 stays blocked: $(grep -m1 '^  total' "$WORK/prof.out")"
else
  fail "resnet-18 --profile: $(grep -E 'blocked->NCHW|total|tunetop run' "$WORK/prof.out" | head -n 4)"
fi
if "$TT" run --network resnet-18 --image-size 40 --log "$LOG" --repeat 1 --profile --no-chain >"$WORK/flat.out" 2>&1 &&
   grep -q "output matches the reference" "$WORK/flat.out" && grep -q "blocked->NCHW" "$WORK/flat.out"; then
  ok "resnet-18 --no-chain: $(grep -m1 '^  total' "$WORK/flat.out")"
else
  fail "resnet-18 --no-chain: $(tail -n 4 "$WORK/flat.out")"
fi

# one operator, with the residual and relu epilogue, and the profile
spec=conv2d:n=1,ci=16,h=12,w=12,co=32,kh=3,kw=3,stride=1,pad=1,bias=1,residual=1,relu=1
"$TT" tune --task "$spec" --trials 2 --headless --log "$WORK/op.log" >/dev/null 2>&1
if "$TT" run --task "$spec" --log "$WORK/op.log" --repeat 3 --profile >"$WORK/op.out" 2>&1 &&
   grep -q "output matches the reference" "$WORK/op.out" && grep -q "Per-op profile" "$WORK/op.out"; then
  ok "run --task $spec"
else
  fail "run --task: $(tail -n 5 "$WORK/op.out")"
fi

# bad input: one line, non-zero exit
expect_fail 2 "unknown network 'resnet-19'" -- "$TT" run --network resnet-19 --log "$LOG"
expect_fail 2 "give --log" -- "$TT" run --network resnet-18
expect_fail 2 "unknown option" -- "$TT" run --network resnet-18 --log "$LOG" --bogus
expect_fail 2 "give --network NAME or --task SPEC" -- "$TT" run --log "$LOG"
expect_fail 1 "does not exist" -- "$TT" run --network resnet-18 --log "$WORK/missing.log"
expect_fail 1 "no successful record for the task" -- "$TT" run --task dense:m=3,n=5,k=7 --log "$LOG"
expect_fail 1 "no successful record for any of the" -- "$TT" run --network vgg-16 --log "$WORK/op.log"
expect_fail 2 "too small" -- "$TT" run --network inception-v3 --image-size 40 --log "$LOG"
expect_fail 2 "unknown target" -- "$TT" run --network resnet-18 --log "$LOG" --target tpu
mkdir -p "$WORK/kept"
expect_fail 1 "exists" -- "$TT" run --task "$spec" --log "$WORK/op.log" --keep "$WORK/kept"
finish
