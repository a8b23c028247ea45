#!/usr/bin/env bash
# bench/search_table.sh: issue #18's benchmark table in one run, one thread.
#
#   bench/search_table.sh BUILD_DIR [--trials "64 200 1000"] [--ops "conv2d dense matmul softmax layer_norm max_pool"]
#                         [--arms "sketch template random metaschedule"] [--seed S] [--work DIR]
#                         [--tvm-venv DIR] [--ort-venv DIR] [--until HH:MM] [--report-only] [--no-vendors]
#                         [--results FILE (default bench/results/search_table.md)]
#
# Arms, per op (the sizes of examples/te/OP.te):
#   sketch        tunetop tune --expr (sketches + evolution, te.sketch)
#   template      tunetop tune --task (the hand template, xgb): conv2d, dense, and matmul as the dense
#                 template's A * B^T (same sizes and FLOPs); softmax, layer-norm and max-pool have none
#   random        tunetop tune --expr --tuner random (the plain sampler of schedules, te.cpu)
#   metaschedule  TVM 0.27's MetaSchedule (bench/tvm/metaschedule_ops.py) on the same computation,
#                 llvm -mcpu=<this CPU> num-cores=1, TVM_NUM_THREADS=1, in its own venv from PyPI
# and the vendors in the same run: OpenBLAS cblas_sgemm 1024^3 (bench/openblas_sgemm.py, the system
# library, 1 thread) and ONNX Runtime's kernels on one-op graphs (bench/ort_ops.py, its own venv,
# intra_op_num_threads=1) for softmax, layer-norm and max-pool.
#
# Order (the budget decides how much of the table a run fills): the vendors (not with
# --no-vendors); then each arm in the order of --arms, every op, at the middle budget
# (200 by default: the 64 figures are the first records of the same session, which runs
# the same first rounds whatever its budget); then the same at the largest budget
# (1000), a tunetop session resuming its 200-trial log, MetaSchedule a fresh session. With
# --until HH:MM (UTC; the next such time: 01:00 given at 23:00 is tomorrow's) or a date and time: no session
# starts after that time; the table says what did not run.
# A missing venv, a failed pip or a TVM failure gives one line and an empty column.
#
# Per op, budget and arm: best latency (us) and GFLOPS (the op's FLOPs, the same count for
# every arm), the trials to reach 95% of that arm's own best at that budget, the wall time
# to that budget (from the session's start; a resumed session adds its own time), the load
# average at the session's start and end; then the issue's targets, each met or not.
# WORK/sessions.tsv keeps op, arm, budget, start, end, exit status and the loads; a second
# call with the same --work reuses every finished session (--report-only: just the table).
# Two calls may share a --work at once (e.g. --arms metaschedule --no-vendors beside the
# tunetop arms): sessions.tsv takes one short line per session.
set -uo pipefail
BUILD=${1:?usage: bench/search_table.sh BUILD_DIR [--trials LIST] [--ops LIST] [--arms LIST] [--seed S] [--work DIR] [--tvm-venv DIR] [--ort-venv DIR] [--until HH:MM] [--report-only]}
shift
TRIALS="64 200 1000"
OPS="conv2d dense matmul softmax layer_norm max_pool"
ARMS="sketch template random metaschedule"
SEED=1
WORK=""
RESULTS=""
TVM_VENV=/tmp/tunetop-tvm-venv
ORT_VENV=/tmp/tunetop-ort-venv
UNTIL=""
REPORT_ONLY=0
VENDORS=1
while [ $# -gt 0 ]; do
  case "$1" in
  --trials) TRIALS=$2; shift 2 ;;
  --ops) OPS=$2; shift 2 ;;
  --arms) ARMS=$2; shift 2 ;;
  --seed) SEED=$2; shift 2 ;;
  --work) WORK=$2; shift 2 ;;
  --tvm-venv) TVM_VENV=$2; shift 2 ;;
  --ort-venv) ORT_VENV=$2; shift 2 ;;
  --until) UNTIL=$2; shift 2 ;;
  --report-only) REPORT_ONLY=1; shift ;;
  --results) RESULTS=$2; shift 2 ;;
  --no-vendors) VENDORS=0; shift ;;
  *) echo "search_table: unknown option $1" >&2; exit 2 ;;
  esac
done
TT="$BUILD/tunetop"
[ -x "$TT" ] || { echo "search_table: no $TT (build first)" >&2; exit 2; }
HERE="$(cd "$(dirname "$0")" && pwd)"
EX="$HERE/../examples/te"
WORK=${WORK:-$(mktemp -d /tmp/search_table.XXXXXX)}
RESULTS=${RESULTS:-$HERE/results/search_table.md}
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
SESS="$WORK/sessions.tsv"
touch "$SESS"
UNTIL_S=""
if [ -n "$UNTIL" ]; then
  UNTIL_S=$(date -u -d "$UNTIL" +%s 2>/dev/null) || { echo "search_table: --until $UNTIL is not a time" >&2; exit 2; }
  # a bare HH:MM already past today is tomorrow's (a stream started at 23:50 --until 02:00)
  case "$UNTIL" in [0-9]:[0-9][0-9] | [0-9][0-9]:[0-9][0-9])
    [ "$UNTIL_S" -gt "$(date -u +%s)" ] || UNTIL_S=$((UNTIL_S + 86400)) ;;
  esac
fi
load() { cut -d' ' -f1 /proc/loadavg; }
BUDGETS=$(for n in $TRIALS; do echo "$n"; done | sort -n | uniq | tr '\n' ' ')
MAX=$(echo $BUDGETS | awk '{ print $NF }')
MID=$(echo $BUDGETS | awk '{ print (NF >= 2 ? $(NF - 1) : $NF) }')

flags=$(lscpu | sed -n 's/^Flags: *//p' | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx512_bf16|fma|amx_tile)$' | tr '\n' ' ')
{
  echo "search_table: $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p') ($flags), $(nproc) cores"
  echo "$("$TT" --version | head -1) ($BUILD); trials $BUDGETS; seed $SEED; work $WORK"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$WORK/header.txt"

time_left() { [ -z "$UNTIL_S" ] || [ "$(date -u +%s)" -lt "$UNTIL_S" ]; }

# ---- the vendors ---------------------------------------------------------
vendors() {
  [ -s "$WORK/openblas.json" ] || python3 "$HERE/openblas_sgemm.py" 1024 >"$WORK/openblas.json" 2>"$WORK/openblas.err" ||
    echo "search_table: OpenBLAS not timed: $(tail -1 "$WORK/openblas.err")"
  local want=""
  for op in $OPS; do case "$op" in softmax | layer_norm | max_pool) want="$want $op" ;; esac; done
  [ -n "$want" ] && [ ! -s "$WORK/ort.jsonl" ] || return 0
  if [ ! -x "$ORT_VENV/bin/python" ] || ! "$ORT_VENV/bin/python" -c 'import onnxruntime, onnx, numpy' 2>/dev/null; then
    echo "search_table: creating $ORT_VENV (onnxruntime, onnx, numpy from PyPI)"
    { python3 -m venv "$ORT_VENV" && "$ORT_VENV/bin/pip" install -q onnxruntime onnx numpy; } >"$WORK/ort-venv.err" 2>&1 ||
      { echo "search_table: no ONNX Runtime venv ($(tail -1 "$WORK/ort-venv.err")): its column stays empty"; return 0; }
  fi
  "$ORT_VENV/bin/python" "$HERE/ort_ops.py" $want >"$WORK/ort.jsonl" 2>"$WORK/ort.err" ||
    echo "search_table: ONNX Runtime failed: $(tail -1 "$WORK/ort.err")"
}

TVM_OK=""
tvm_venv() {
  [ -n "$TVM_OK" ] && { [ "$TVM_OK" = yes ]; return; }
  if [ -x "$TVM_VENV/bin/python" ] && "$TVM_VENV/bin/python" -c 'import tvm.s_tir.meta_schedule' 2>/dev/null; then
    TVM_OK=yes
    return 0
  fi
  echo "search_table: creating $TVM_VENV (apache-tvm 0.27 with apache-tvm-ffi 0.1.14.post0 from PyPI)"
  if { python3 -m venv "$TVM_VENV" && "$TVM_VENV/bin/pip" install -q "apache-tvm==0.27.0.post1" \
    "apache-tvm-ffi==0.1.14.post0" psutil cloudpickle xgboost-cpu; } >"$WORK/tvm-venv.err" 2>&1; then
    TVM_OK=yes
  else
    TVM_OK=no
    echo "search_table: no TVM venv ($(tail -1 "$WORK/tvm-venv.err")): the MetaSchedule column stays empty"
  fi
  [ "$TVM_OK" = yes ]
}

# ---- one session -----------------------------------------------------------
task_of() {
  case "$1" in
  conv2d) echo "conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=1,pad=1" ;;
  dense) echo "dense:m=1,n=1000,k=512" ;;
  matmul) echo "dense:m=1024,n=1024,k=1024" ;;
  *) echo "" ;;
  esac
}

ran() { awk -F'\t' -v o="$1" -v a="$2" -v b="$3" '$1 == o && $2 == a && $3 == b { f = 1 } END { exit !f }' "$SESS"; }

session() { # op arm budget
  local op=$1 arm=$2 b=$3 rc=0 start end l0
  ran "$op" "$arm" "$b" && return 0
  if ! time_left; then
    echo "search_table: $op $arm $b trials not run (--until $UNTIL)"
    return 0
  fi
  [ "$arm" = template ] && [ -z "$(task_of "$op")" ] && return 0
  [ "$arm" = metaschedule ] && ! tvm_venv && return 0
  local log="$WORK/$op.$arm.log" out="$WORK/$op.$arm.$b.out"
  local common=(tune --headless --no-roof --threads 1 --trials "$b" --seed "$SEED" --log "$log")
  echo "search_table: $(date -u +%H:%M:%S) $op $arm $b trials (load $(load))"
  l0=$(load)
  start=$(date +%s.%N)
  case "$arm" in
  sketch) OMP_NUM_THREADS=1 "$TT" "${common[@]}" --expr "$EX/$op.te" >"$out" 2>&1 || rc=$? ;;
  random) OMP_NUM_THREADS=1 "$TT" "${common[@]}" --expr "$EX/$op.te" --tuner random >"$out" 2>&1 || rc=$? ;;
  template) OMP_NUM_THREADS=1 "$TT" "${common[@]}" --task "$(task_of "$op")" --tuner xgb >"$out" 2>&1 || rc=$? ;;
  metaschedule)
    rm -rf "$WORK/ms.$op.$b"
    TVM_NUM_THREADS=1 OMP_NUM_THREADS=1 "$TVM_VENV/bin/python" "$HERE/tvm/metaschedule_ops.py" "$op" "$b" \
      "$WORK/ms.$op.$b" "$WORK/$op.metaschedule.$b.jsonl" "$SEED" >"$out" 2>&1 || rc=$?
    ;;
  esac
  end=$(date +%s.%N)
  [ $rc -eq 0 ] || echo "search_table: $op $arm $b trials: exit $rc ($(grep -v '^\s*$' "$out" | tail -1 | cut -c1-200))"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$op" "$arm" "$b" "$start" "$end" "$rc" "$l0" "$(load)" >>"$SESS"
}

if [ $REPORT_ONLY -eq 0 ]; then
  [ $VENDORS -eq 1 ] && vendors
  for b in $BUDGETS; do
    [ "$b" -lt "$MID" ] && continue # read from the first records of a longer session
    for arm in $ARMS; do
      for op in $OPS; do
        session "$op" "$arm" "$b"
      done
    done
  done
fi

# the latest table, with the machine and the date, goes to bench/results/ (--results FILE elsewhere)
mkdir -p "$(dirname "$RESULTS")"
{
  echo "# search_table: latest results"
  echo
  echo "Written by bench/search_table.sh (see bench/README.md)."
  echo
  sed 's/$/  /' "$WORK/header.txt"
  echo
  python3 "$HERE/search_table_report.py" "$TT" "$WORK" "$BUDGETS" "$OPS" "$ARMS" "$SESS"
  echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$RESULTS.tmp"
mv "$RESULTS.tmp" "$RESULTS"
echo "search_table: the table is in $RESULTS"
