#!/bin/bash
# `tunetop view --follow` on TVM's logs while a script appends to them: an
# AutoTVM record file, an auto-scheduler record file and a MetaSchedule work
# directory. Each starts with one record; a second one is written in two
# pieces (a half line first, which the view waits for without calling it an
# error), then a third whole line; the table grows to show them.
set -u
. "$(dirname "$0")/lib.sh"
DATA=$(cd "$(dirname "$0")/../data/tvm" && pwd)

follow_case() { # NAME VIEWPATH APPENDFILE LINE1 LINE2 LINE3 TASKS_AFTER
    local name=$1 view=$2 file=$3 l1=$4 l2=$5 l3=$6
    printf '%s\n' "$l1" >>"$file"
    start 120 30 "$TT" view --follow "$view"
    wait_for '1 records from' 10
    # half of the second line, no newline: a writer in the middle of it
    local half=$((${#l2} / 2))
    printf '%s' "${l2:0:$half}" >>"$file"
    wait_for 'waiting for the rest of the last line' 10
    grep -q 'malformed' "$SCREEN" && fail "$name: a half-written line was called malformed"
    printf '%s\n' "${l2:$half}" >>"$file"
    wait_for 'log grew: 1 new record' 10
    printf '%s\n' "$l3" >>"$file"
    wait_until 10 "$name: third record shown" eval 'grep -q "log grew: 1 new record" "$SCREEN" && [ "$(grep -cE "^[ >] +[0-9]+ " "$SCREEN")" -ge 2 ]'
    save "view_follow_$name"
    keys q
    wait_exit 0 10
}

# AutoTVM: three records of two workloads (lines 1, 2 and 4 of the fixture)
A=$WORK/autotvm.log
follow_case autotvm "$A" "$A" "$(sed -n 1p "$DATA/autotvm_cuda.log")" "$(sed -n 2p "$DATA/autotvm_cuda.log")" \
    "$(sed -n 4p "$DATA/autotvm_cuda.log")"

# auto-scheduler: records 1, 2 (same workload) and 4 (another)
S=$WORK/ansor.json
follow_case autoscheduler "$S" "$S" "$(sed -n 1p "$DATA/autoscheduler.json")" "$(sed -n 2p "$DATA/autoscheduler.json")" \
    "$(sed -n 4p "$DATA/autoscheduler.json")"

# MetaSchedule: the work directory's record file grows (workloads 0, 0, 1)
M=$WORK/ms
mkdir -p "$M"
cp "$DATA/ms_work/database_workload.json" "$M/"
follow_case metaschedule "$M" "$M/database_tuning_record.json" "$(sed -n 1p "$DATA/ms_work/database_tuning_record.json")" \
    "$(sed -n 2p "$DATA/ms_work/database_tuning_record.json")" "$(sed -n 3p "$DATA/ms_work/database_tuning_record.json")"

# a file of no known format: one line, exit status 1, before any screen
echo 'hello' >"$WORK/plain.txt"
out=$("$TT" view "$WORK/plain.txt" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "view of an unknown format: exit $rc"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "view of an unknown format: not one line: $out"
echo "ok"
