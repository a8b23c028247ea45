#!/usr/bin/env bash
# bench/sketch_bench.sh: template-free search (sketches + evolution, template
# te.sketch) against the plain random sampler of schedules (te.cpu, --tuner
# random) and the hand-written templates (xgb), on the same operators, one
# kernel thread, in one run.
#
#   bench/sketch_bench.sh BUILD_DIR [--trials "64 200"] [--ops "dense matmul conv2d"] [--seeds "1"] [--work DIR]
#
# Each arm is one real `tunetop tune` session per op and seed with the largest
# budget; the figures at a smaller budget come from the same session's first
# records (a one-task session runs the same first rounds whatever its budget:
# batch 64). Per op, arm and budget: the best GFLOPS (the operator's FLOPs,
# 2*M*N*K or the direct convolution's, over the best mean latency, so every arm
# is counted alike), the trials the session needed to reach 95% of its own
# best at that budget, and the wall time to that budget (from the records'
# timestamps; the session's start is its first record's timestamp minus that
# record's build and run time). Medians over seeds. The processor, the load
# average (before and after) and the date are printed: on a shared machine the
# figures are noisy.
set -euo pipefail
BUILD=${1:?usage: bench/sketch_bench.sh BUILD_DIR [--trials LIST] [--ops LIST] [--seeds LIST] [--work DIR]}
shift
TRIALS="64 200"
OPS="dense matmul conv2d"
SEEDS="1"
WORK=""
while [ $# -gt 0 ]; do
  case "$1" in
  --trials) TRIALS=$2; shift 2 ;;
  --ops) OPS=$2; shift 2 ;;
  --seeds) SEEDS=$2; shift 2 ;;
  --work) WORK=$2; shift 2 ;;
  *) echo "sketch_bench: unknown option $1" >&2; exit 2 ;;
  esac
done
TT="$BUILD/tunetop"
[ -x "$TT" ] || { echo "sketch_bench: no $TT (build first)" >&2; exit 2; }
EX="$(cd "$(dirname "$0")/../examples/te" && pwd)"
WORK=${WORK:-$(mktemp -d /tmp/sketch_bench.XXXXXX)}
mkdir -p "$WORK"
MAX=0
for n in $TRIALS; do [ "$n" -gt "$MAX" ] && MAX=$n; done

# op -> expression file, template task, FLOPs
expr_of() { echo "$EX/$1.te"; }
task_of() {
  case "$1" in
  dense) echo "dense:m=1,n=1000,k=512" ;;
  matmul) echo "dense:m=1024,n=1024,k=1024" ;;   # the dense template computes A * B^T: same FLOPs and sizes
  conv2d) echo "conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=1,pad=1" ;;
  esac
}
flops_of() {
  case "$1" in
  dense) echo $((2 * 1 * 1000 * 512)) ;;
  matmul) echo $((2 * 1024 * 1024 * 1024)) ;;
  conv2d) echo $((2 * 64 * 56 * 56 * 64 * 9)) ;;
  esac
}

echo "sketch_bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); trials: $TRIALS; seeds: $SEEDS; work: $WORK"

run_arm() { # op arm seed -> WORK/op.arm.seed.log
  local op=$1 arm=$2 seed=$3 log="$WORK/$op.$arm.$seed.log"
  local common=(tune --headless --no-roof --threads 1 --trials "$MAX" --seed "$seed" --log "$log")
  rm -f "$log"
  case "$arm" in
  sketch) "$TT" "${common[@]}" --expr "$(expr_of "$op")" ;;
  random) "$TT" "${common[@]}" --expr "$(expr_of "$op")" --tuner random ;;
  template) "$TT" "${common[@]}" --task "$(task_of "$op")" --tuner xgb ;;
  esac >"$WORK/$op.$arm.$seed.out" 2>&1 || echo "  ($op $arm seed $seed: exit $?; see $WORK/$op.$arm.$seed.out)"
}

for op in $OPS; do
  for seed in $SEEDS; do
    for arm in sketch random template; do
      run_arm "$op" "$arm" "$seed"
    done
  done
done

python3 - "$TT" "$WORK" "$TRIALS" "$OPS" "$SEEDS" <<'EOF'
import json, statistics, subprocess, sys
tt, work, trials, ops, seeds = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split()
FLOPS = {"dense": 2 * 1000 * 512, "matmul": 2 * 1024 ** 3, "conv2d": 2 * 64 * 56 * 56 * 64 * 9}
def records(path):
    out = subprocess.run([tt, "dump", path], capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]
def figures(recs, budget, flops):
    recs = recs[:budget]
    if not recs: return None
    start = recs[0]["ts"] - (recs[0].get("build_s") or 0) - (recs[0].get("run_s") or 0)
    best, curve = 0.0, []
    for r in recs:
        if r["err"] == 0 and r.get("costs"):
            best = max(best, flops / (sum(r["costs"]) / len(r["costs"])) / 1e9)
        curve.append(best)
    to95 = next((i + 1 for i, g in enumerate(curve) if best > 0 and g >= 0.95 * best), None)
    return best, to95, recs[-1]["ts"] - start, len(recs)
arms = ["sketch", "random", "template"]
print()
print("| op | trials | arm | best GFLOPS | trials to 95% | wall s | ratio vs template | ratio vs random |")
print("|---|---|---|---|---|---|---|---|")
for op in ops:
    for b in map(int, trials):
        med = {}
        for arm in arms:
            fs = [figures(records(f"{work}/{op}.{arm}.{s}.log"), b, FLOPS[op]) for s in seeds]
            fs = [f for f in fs if f]
            if not fs: continue
            med[arm] = (statistics.median(f[0] for f in fs), statistics.median(f[1] or b for f in fs),
                        statistics.median(f[2] for f in fs), min(f[3] for f in fs))
        for arm in arms:
            if arm not in med: continue
            g, t95, wall, n = med[arm]
            rt = f"{g / med['template'][0]:.2f}x" if "template" in med and med["template"][0] > 0 else "-"
            rr = f"{g / med['random'][0]:.2f}x" if "random" in med and med["random"][0] > 0 else "-"
            note = "" if n >= b else f" (only {n} records)"
            print(f"| {op} | {b} | {arm} | {g:.2f} | {t95:.0f} | {wall:.0f}{note} | {rt} | {rr} |")
EOF
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
