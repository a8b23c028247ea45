#!/usr/bin/env bash
# bench/model_bench.sh: ONNX models, tunetop beside ONNX Runtime and OpenVINO
# on the same file and input, at 1 and 2 threads.
#
# usage: bench/model_bench.sh BUILD_DIR [--models "resnet18 mobilenet_v3_large ..."] [--trials N]
#            [--threads "1 2"] [--tune-threads T] [--repeat K] [--rounds R] [--work DIR] [--results FILE]
#
# The models are real architectures as their own libraries define them
# (torchvision, Hugging Face transformers) with random weights, exported by
# torch.onnx (bench/models/export_models.py), with one input each. For each
# model: `tunetop tasks --model`; with --trials N > 0, `tunetop tune --model
# --trials N --threads T` (T: --tune-threads, default the largest of --threads;
# the log in the work directory is resumed, so a second call re-times without
# re-tuning; the table gives the minutes it took); then per thread count `tunetop run --model`
# (zero trials: every task at its default config; and from the log when
# tuned), ONNX Runtime and OpenVINO in turn, R rounds (default 3) of the
# median of K runs each, the median round kept per tool, and the
# largest difference of tunetop's output from ONNX Runtime's relative to the
# largest |value|. The table goes to bench/results/model_bench.md (or
# --results) with the machine, the date and the load average.
#
# torch, torchvision, transformers, onnxruntime, openvino and numpy come from
# PyPI into a virtual environment of the bench's own (WORK/venv); the build and
# the tests never use them.
set -u
BUILD=${1:?usage: $0 BUILD_DIR [options]}
shift
MODELS="resnet18 resnet50 mobilenet_v2 mobilenet_v3_large efficientnet_b0 convnext_tiny vit_b_16 bert_base"
TRIALS=0
THREADS="1 2"
TUNE_THREADS=
REPEAT=10
ROUNDS=3
WORK=${TMPDIR:-/tmp}/tunetop-model-bench
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=$HERE/results/model_bench.md
while [ $# -gt 0 ]; do
  case "$1" in
    --models) MODELS=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --tune-threads) TUNE_THREADS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --results) RESULTS=$2; shift 2 ;;
    *) echo "model_bench: unknown option '$1'" >&2; exit 2 ;;
  esac
done
TT=$BUILD/tunetop
[ -n "$TUNE_THREADS" ] || TUNE_THREADS=$(printf '%s\n' $THREADS | sort -n | tail -n 1)
[ -x "$TT" ] || { echo "model_bench: no $TT (build first)" >&2; exit 2; }
mkdir -p "$WORK/models"
VENV=$WORK/venv
PKGS="torch torchvision transformers onnx onnxruntime openvino numpy"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import torch, torchvision, transformers, onnxruntime, openvino' 2>/dev/null; then
  echo "creating $VENV ($PKGS from PyPI)"
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q $PKGS || { echo "model_bench: pip failed" >&2; exit 1; }
fi
PY=$VENV/bin/python
"$PY" "$HERE/models/export_models.py" "$WORK/models" $MODELS 2>/dev/null | sed 's/^/  /'

cpu=$(lscpu | sed -n 's/^Model name: *//p')
isa=$(grep -q avx512f /proc/cpuinfo && echo AVX-512 || (grep -q avx2 /proc/cpuinfo && echo AVX2 || echo SSE))
{
  echo "# model_bench: ONNX models, tunetop beside ONNX Runtime and OpenVINO"
  echo
  echo "Machine: $cpu ($isa, $(nproc) cores); $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "ms: per tool, the median over $ROUNDS rounds (tunetop, ONNX Runtime, OpenVINO in turn) of the median of $REPEAT runs."
  echo "tt0: tunetop at zero trials (every task at its default config); tt: after"
  echo "$TRIALS trials of tune --model at $TUNE_THREADS threads (tune min: the minutes they took). ratio = tunetop / ONNX Runtime (< 1: tunetop faster). err: max |tunetop -"
  echo "ONNX Runtime| / max |ONNX Runtime|. Command: bench/model_bench.sh BUILD --trials $TRIALS --threads \"$THREADS\" --tune-threads $TUNE_THREADS --rounds $ROUNDS."
  echo
  echo "| model | threads | tasks | tune min | tt0 | tt | ONNX Runtime | OpenVINO | tt0/ORT | tt/ORT | err |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} >"$RESULTS.tmp"

median_of() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' "$1" | head -n 1; }
# the median of the non-empty arguments (empty when there is none)
median() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

for m in $MODELS; do
  onnx=$WORK/models/$m.onnx
  [ -f "$onnx" ] || { echo "| $m | - | export failed | | | | | | | | |" >>"$RESULTS.tmp"; continue; }
  inputs=()
  for f in "$WORK/models/$m".*.npy; do
    n=$(basename "$f" .npy); n=${n#"$m".}; inputs+=("$n=$f")
  done
  ntasks=$("$TT" tasks --model "$onnx" 2>/dev/null | sed -n 's/^Total: \([0-9]*\) tasks.*/\1/p')
  log=$WORK/$m.log
  tune_min=-
  if [ "$TRIALS" -gt 0 ]; then
    start=$(date +%s)
    "$TT" tune --model "$onnx" --trials "$TRIALS" --threads "$TUNE_THREADS" --headless --log "$log" \
      >"$WORK/$m.tune.out" 2>&1
    tune_min=$(awk -v s="$(($(date +%s) - start))" 'BEGIN { printf "%.1f", s / 60 }')
  fi
  for t in $THREADS; do
    in_args=(); for i in "${inputs[@]}"; do in_args+=(--input "$i"); done
    # ROUNDS rounds of tunetop, ONNX Runtime and OpenVINO one after the other: a change of the
    # machine's load falls on all of them; each figure is the median of its rounds' medians
    t0s=() tts=() orts=() ovs=()
    for ((round = 0; round < ROUNDS; round++)); do
      "$TT" run --model "$onnx" "${in_args[@]}" --threads "$t" --repeat "$REPEAT" --output-dir "$WORK/$m.tt0" \
        >"$WORK/$m.tt0.$t" 2>&1
      t0s+=("$(median_of "$WORK/$m.tt0.$t")")
      if [ "$TRIALS" -gt 0 ]; then
        "$TT" run --model "$onnx" --log "$log" "${in_args[@]}" --threads "$t" --repeat "$REPEAT" \
          --output-dir "$WORK/$m.tt" >"$WORK/$m.tt.$t" 2>&1
        tts+=("$(median_of "$WORK/$m.tt.$t")")
      fi
      orts+=("$(OMP_NUM_THREADS=$t "$PY" "$HERE/models/reference_run.py" ort "$onnx" "$WORK/$m.ort" "$t" "$REPEAT" "${inputs[@]}" 2>/dev/null | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p')")
      ovs+=("$("$PY" "$HERE/models/reference_run.py" openvino "$onnx" "$WORK/$m.ov" "$t" "$REPEAT" "${inputs[@]}" 2>/dev/null | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p')")
    done
    tt0=$(median "${t0s[@]}") tt=$(median "${tts[@]}") ort=$(median "${orts[@]}") ov=$(median "${ovs[@]}")
    [ "$TRIALS" -gt 0 ] || tt=-
    err=$("$PY" - "$WORK/$m.tt0" "$WORK/$m.ort" <<'PY' 2>/dev/null
import glob, os, sys
import numpy as np
worst, scale, n = 0.0, 0.0, 0
for f in glob.glob(os.path.join(sys.argv[2], "*.npy")):
    want = np.load(f).astype(np.float64)
    got = np.load(os.path.join(sys.argv[1], os.path.basename(f))).astype(np.float64)
    worst = max(worst, np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
    scale, n = max(scale, np.abs(want).max()), n + 1
# no output compared, or outputs that are all zero, prove nothing: say so
print("%.1e" % worst if n and scale > 0 else "n/a (no output)" if not n else "n/a (all zero)")
PY
)
    ratio() { [ -n "$1" ] && [ "$1" != - ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }' || echo -; }
    [ -n "$tt0" ] || tt0="failed: $(grep -m1 'tunetop run' "$WORK/$m.tt0.$t" | cut -c1-80)"
    echo "| $m | $t | ${ntasks:--} | $tune_min | $tt0 | $tt | ${ort:--} | ${ov:--} | $(ratio "$tt0" "$ort") | $(ratio "$tt" "$ort") | ${err:--} |" >>"$RESULTS.tmp"
    tail -n 1 "$RESULTS.tmp"
  done
done
echo >>"$RESULTS.tmp"
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)." >>"$RESULTS.tmp"
mkdir -p "$(dirname "$RESULTS")"
mv "$RESULTS.tmp" "$RESULTS"
echo "model_bench: table in $RESULTS"
