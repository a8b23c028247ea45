#!/bin/bash
# bench/tvm_metaschedule.sh BUILD_DIR [VENV]: TVM 0.27 from PyPI in a venv of its
# own, a 20-trial MetaSchedule run into a work directory, then `tunetop best` on
# that directory: the best latency must be the one TVM reports.
# apache-tvm 0.27 accepts any apache-tvm-ffi >= 0.1.14.post0; with 0.1.15
# (what pip picks) every JSON save crashes (a segfault in ToJSONGraph), so the
# venv pins 0.1.14.post0.
set -eu
BUILD=${1:?usage: $0 BUILD_DIR [VENV]}
VENV=${2:-/tmp/tunetop-tvm-venv}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "apache-tvm==0.27.0.post1" "apache-tvm-ffi==0.1.14.post0" psutil cloudpickle xgboost-cpu
WORK=$(mktemp -d /tmp/ms_work.XXXXXX)
echo "== TVM: MetaSchedule, 20 trials, work directory $WORK"
"$VENV/bin/python" "$HERE/tvm/metaschedule_run.py" "$WORK" 20 2>&1 | grep -E '^tvm |Error' || true
echo "== tunetop best $WORK"
"$BUILD/tunetop" best "$WORK"
echo "== machine: $(lscpu | sed -n 's/^Model name: *//p'), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
