#!/bin/bash
# `tunetop view --model` of a log that holds one of the model's tasks: the
# table's rows are the model's tasks with the IDs `tasks --model` prints (the
# tasks without a record at 0 trials), and the header's estimate leaves the
# workloads without a result out and counts them. A log of another model
# shows the same rows and says on the status line that none of its records
# is of the model.
set -u
. "$(dirname "$0")/lib.sh"
DATA=$(cd "$(dirname "$0")/../data/onnx" && pwd)
MODEL=$DATA/tiny_cnn.onnx

"$TT" tasks --model "$MODEL" | awk '$1 ~ /^[0-9]+$/ && NF >= 6 { print $1 }' >"$WORK/ids"
[ "$(wc -l <"$WORK/ids")" -eq 8 ] || fail "tasks --model lists $(wc -l <"$WORK/ids") tasks, not 8"
"$TT" tune --task dense:m=1,n=10,k=32,bias=1 --trials 3 --headless --no-roof --log "$WORK/dense.log" >/dev/null 2>&1 ||
    fail "tune --task of the model's dense workload failed"

start 140 30 "$TT" view --model "$MODEL" "$WORK/dense.log"
wait_for 'dense 1x32->10' 10
wait_for '3 records from' 5
for id in $(cat "$WORK/ids"); do
    want=0
    [ "$id" = 7 ] && want=3
    got=$(field "$id" trials)
    [ "$got" = "$want" ] || fail "task $id: $got trials on screen, want $want"
done
grep -qE '5 tasks left out' "$SCREEN" || fail "the header does not leave out the 5 workloads without a result"
save view_model_140x30
keys q
wait_exit 0 10
check_restored

"$TT" tune --task dense:m=16,n=96,k=32,bias=1 --trials 2 --headless --no-roof --log "$WORK/other.log" >/dev/null 2>&1 ||
    fail "tune --task of another workload failed"
start 140 30 "$TT" view --model "$MODEL" "$WORK/other.log"
wait_for 'none of the log.s 2 records is of a workload of' 10
[ "$(grep -cE '^[ >*] +[0-9]+ ' "$SCREEN")" -eq 8 ] || fail "the log of another model does not show the model's 8 rows"
keys q
wait_exit 0 10
echo "ok"
