#!/bin/bash
# bench/network_bench.sh: whole networks, tunetop against ONNX Runtime.
#
# usage: bench/network_bench.sh BUILD_DIR [--nets "resnet-18 resnet-50 mobilenet-v2 bert-base"]
#            [--trials N] [--rounds R] [--repeat K] [--threads "1 2"] [--image-size S] [--seq-len L]
#            [--work DIR] [--template NAME]
#
# For each network: tune it (`tunetop tune --network NAME --trials N`, the budget
# stated in the output; an existing log in the work directory is resumed, so a
# second call re-times without re-tuning), then for each thread count, R rounds
# that alternate the two sides: `tunetop run --threads T` (the generated program:
# tuned kernels + runtime, checked against the reference) and ONNX Runtime's CPU
# provider on the same graph and weights (bench/network_bench_onnx.py builds the
# ONNX model from the graph.json and data.bin that `run --keep` writes, and
# checks its output against tunetop's). Each side reports the median of K
# repeats (each at least 200 ms); the table gives the median over the rounds, the
# ratio ORT / tunetop (> 1: tunetop faster), the tuner's estimate against the
# measured median, and the share of untuned ops and of kernels with layout
# transforms inside (from `run --profile`), with the processor and load average.
#
# By default `tune` searches both conv2d templates for the 3x3 stride-1 layers (direct
# and Winograd, a group of alternatives) and `run` uses the faster of each.
# --template NAME tunes with that template only where it applies (e.g.
# conv2d_nchwc.cpu for direct only; the rest keep their default template).
#
# ONNX Runtime, onnx and numpy come from PyPI into a virtual environment of the
# bench's own (WORK/venv); the build and the tests never use them.
set -u
BUILD=${1:?usage: $0 BUILD_DIR [options]}
shift
NETS="resnet-18 resnet-50 mobilenet-v2 bert-base"
TRIALS=600
TEMPLATE=
ROUNDS=3
REPEAT=10
THREADS="1 2"
IMAGE=""
SEQ=""
WORK=${TMPDIR:-/tmp}/tunetop-network-bench
while [ $# -gt 0 ]; do
  case "$1" in
    --nets) NETS=$2; shift 2 ;;
    --trials) TRIALS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --image-size) IMAGE="--image-size $2"; shift 2 ;;
    --seq-len) SEQ="--seq-len $2"; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --template) TEMPLATE="--template $2"; shift 2 ;;
    *) echo "network_bench: unknown option '$1'" >&2; exit 2 ;;
  esac
done
TT=$BUILD/tunetop
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$TT" ] || { echo "network_bench: no $TT (build first)" >&2; exit 2; }
mkdir -p "$WORK"
VENV=$WORK/venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import onnxruntime, onnx, numpy' 2>/dev/null; then
  echo "creating $VENV (onnxruntime, onnx, numpy from PyPI)"
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q onnxruntime onnx numpy ||
    { echo "network_bench: could not install onnxruntime, onnx, numpy into $VENV" >&2; exit 1; }
fi
PY=$VENV/bin/python

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit } if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "processor: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores)"
echo "onnxruntime $("$PY" -c 'import onnxruntime; print(onnxruntime.__version__)'), $(cc --version | head -n 1)"
echo "tunetop programs run with OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} (as tunetop run sets it)"
echo "budget: tune --trials $TRIALS $TEMPLATE per network (xgb tuner, gradient scheduler); $ROUNDS rounds x $REPEAT repeats per side"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '\n%-13s %3s %12s %12s %9s %12s %9s %9s %9s %s\n' network thr "tunetop ms" "ORT ms" "ORT/tt" "estimate ms" "meas/est" untuned "layout" "load avg"
results=()
for net in $NETS; do
  size=$IMAGE
  [ "$net" = bert-base ] && size=$SEQ
  log=$WORK/$net.log
  # shellcheck disable=SC2086
  if ! "$TT" tune --network "$net" $size $TEMPLATE --trials "$TRIALS" --log "$log" --headless >"$WORK/$net.tune.out" 2>&1; then
    echo "network_bench: tuning $net failed: $(tail -n 2 "$WORK/$net.tune.out")" >&2
    continue
  fi
  for thr in $THREADS; do
    rm -rf "$WORK/$net.prog"
    # shellcheck disable=SC2086
    if ! "$TT" run --network "$net" $size --log "$log" --threads "$thr" --repeat "$REPEAT" --min-repeat-ms 200 \
         --profile --keep "$WORK/$net.prog" >"$WORK/$net.run.out" 2>"$WORK/$net.run.err"; then
      echo "network_bench: run $net failed: $(tail -n 2 "$WORK/$net.run.err")" >&2
      continue
    fi
    est=$(sed -n "s/^Tuner's estimate: \([0-9.]*\) ms kernels only.*/\1/p" "$WORK/$net.run.out")
    untuned=$(sed -n 's/.*untuned ops \([0-9.]*\)%.*/\1/p' "$WORK/$net.run.out")
    layout=$(sed -n 's/.*, layout transforms \([0-9.]*\)%.*/\1/p' "$WORK/$net.run.out")
    tt_meds=()
    ort_meds=()
    for r in $(seq 1 "$ROUNDS"); do
      # alternate which side goes first
      for side in $( [ $((r % 2)) -eq 1 ] && echo "tt ort" || echo "ort tt"); do
        if [ "$side" = tt ]; then
          OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OMP_NUM_THREADS=$thr "$WORK/$net.prog/net" "$WORK/$net.prog/data.bin" "$WORK/$net.prog/out.bin" 1 "$REPEAT" 200 0 "$thr" \
            >"$WORK/$net.tt.out" 2>&1 || { echo "network_bench: $net program failed" >&2; continue; }
          tt_meds+=("$(awk '/^TT_RUN/ { print $3 * 1e3 }' "$WORK/$net.tt.out" | median)")
        else
          line=$("$PY" "$HERE/network_bench_onnx.py" "$WORK/$net.prog" --threads "$thr" --repeat "$REPEAT" --min-repeat-ms 200) ||
            { echo "network_bench: ONNX Runtime on $net failed" >&2; continue; }
          ort_meds+=("$(echo "$line" | awk '{ print $2 }')")
        fi
      done
    done
    tt=$(printf '%s\n' "${tt_meds[@]}" | median)
    ort=$(printf '%s\n' "${ort_meds[@]}" | median)
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    row=$(awk -v n="$net" -v t="$thr" -v a="$tt" -v b="$ort" -v e="$est" -v u="$untuned" -v l="$layout" -v ld="$load" \
      'BEGIN { printf "%-13s %3d %12.3f %12.3f %9.2f %12.3f %9.2f %8.1f%% %8.1f%% %s", n, t, a, b, b / a, e, a / e, u, l, ld }')
    echo "$row"
    results+=("$row")
    echo "  rounds: tunetop ${tt_meds[*]} ms; ORT ${ort_meds[*]} ms" >>"$WORK/rounds.txt"
  done
done
echo
echo "ORT/tt > 1: tunetop is faster. estimate: tuner's weight x best kernel latency (kernels only); meas/est: measured"
echo "median / estimate. untuned: share of the untuned ops in the profiled run; layout: share of the layout transforms"
echo "(NCHW <-> blocked, blocked -> blocked between kernels). Per-round medians in $WORK/rounds.txt."
