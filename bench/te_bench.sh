#!/usr/bin/env bash
# bench/te_bench.sh: the tensor-expression path beside the template path on cpu.
#
#   bench/te_bench.sh BUILD_DIR [--trials N] [--work DIR]
#
# 1. BUILD_DIR/bench/te_bench --trials N: every shipped example (examples/te/) at its default sizes, N random
#    schedules of the plain sampler: lowering ms and compile s per candidate (medians), best GFLOPS.
# 2. The four template workloads at the same sizes (conv2d, depthwise, dense, batch_matmul): a real
#    `tunetop tune --tuner random --trials N` session each; from its records the median build_s per candidate
#    (generation and compile; templates have no lowering) and the best GFLOPS (`tunetop best`).
# Prints the processor and the load average before and after. Not a test.
set -u
BUILD=${1:?usage: bench/te_bench.sh BUILD_DIR [--trials N] [--work DIR]}
shift
TRIALS=64
WORK=$(mktemp -d /tmp/tt-te-bench.XXXXXX)
while [ $# -gt 0 ]; do
  case "$1" in
  --trials) TRIALS=$2; shift 2 ;;
  --work) WORK=$2; mkdir -p "$WORK"; shift 2 ;;
  *) echo "usage: bench/te_bench.sh BUILD_DIR [--trials N] [--work DIR]" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TT="$BUILD/tunetop"
echo "te_bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); trials: $TRIALS; work: $WORK"
echo
echo "== expressions (te_bench: plain sampler, each candidate compiled alone) =="
(cd "$ROOT" && "$BUILD/bench/te_bench" --trials "$TRIALS") || echo "(te_bench: exit $?)"
echo
echo "== templates (tunetop tune --tuner random, the same sizes) =="
TASKS="conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=1,pad=1
depthwise_conv2d:n=1,ci=32,h=112,w=112,mult=1,kh=3,kw=3,stride=2,pad=1
dense:m=1,n=1000,k=512
batch_matmul:b=12,m=128,n=128,k=64"
printf '%-18s %9s %10s %9s\n' "template task" "measured" "build s" "best GF/s"
while read -r task; do
  name=${task%%:*}
  log="$WORK/$name.log"
  rm -f "$log"
  "$TT" tune --headless --no-roof --tuner random --trials "$TRIALS" --seed 1 --task "$task" --log "$log" \
    >"$WORK/$name.out" 2>&1 || echo "  ($name: exit $?; see $WORK/$name.out)"
  "$TT" dump "$log" 2>/dev/null | python3 -c '
import json, statistics, sys
recs = [json.loads(l) for l in sys.stdin if l.startswith("{")]
b = [r["build_s"] for r in recs if r.get("build_s")]
ok = sum(1 for r in recs if r.get("err") == 0)
med = statistics.median(b) if b else float("nan")
print(f"{len(recs)} {ok} {med:.2f}")' >"$WORK/$name.fig"
  read -r n ok build <"$WORK/$name.fig"
  gf=$("$TT" best "$log" 2>/dev/null | sed -n 's/^ *speed *\([0-9.]*\) GFLOPS.*/\1/p' | head -1)
  printf '%-18s %5s/%-3s %10s %9s\n' "$name" "$ok" "$n" "$build" "${gf:--}"
done <<<"$TASKS"
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
