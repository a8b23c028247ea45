#!/bin/bash
# A sketch-searched expression (template te.sketch, evolution with the
# learned cost model) in the terminal UI: under the header, the selected
# task's search status wraps over the lines the width needs: its sketch count,
# the generation, the cost model's size, fit and scoring time, the best
# schedule it scored with the GFLOPS it predicted before the measurement,
# and the rank correlation of the last round's predictions with the
# measurements. b opens the best candidate: its sketch and schedule, its
# steps and the loop nest they replay to. With --cost-model none the line
# says the model is off. Then q quits.
set -u
. "$(dirname "$0")/lib.sh"
EX="$(cd "$(dirname "$0")/../../examples/te" && pwd)"

LOG=$WORK/sketch.log
start 100 32 "$TT" tune --expr "$EX/matmul.te" --set N=32 --trials 400 --round-size 8 --population 256 --no-roof \
    --threads 1 --log "$LOG"
wait_for 'expr matmul' 20
wait_for '^task 0 search evolution: sketches [0-9]+, generation [0-9]+, [0-9]+ schedules measured;' 60
# a round after the first fit: the model scored what was measured next
wait_for 'generation ([3-9]|[1-9][0-9])' 180
wait_for 'cost model on [0-9]+ schedules \(fit [0-9.]+ s, [0-9]+ scored in [0-9.]+ s\);' 10
wait_for 'best [0-9.]+ GFLOPS, predicted [0-9.]+;' 10
wait_for 'last round rank correlation -?[0-9.]+ over [0-9]+' 10
save sketch_search_100x32
keys b
wait_for 'Best candidate of task 0 expr matmul' 10
wait_for 'sketch [0-9]+, schedule [0-9a-f]{10}' 5
wait_for 'Steps: [a-z_]+ [0-9]' 5
wait_for 'loop nest \(the steps replayed\)' 5
save sketch_best_100x32
keys b
wait_until 5 "the best page closed" eval '! grep -q "Best candidate of task" "$SCREEN"'
keys q
wait_for 'stop the session and quit' 5
keys y
wait_exit 0 60
check_restored

start 100 32 "$TT" tune --expr "$EX/matmul.te" --set N=32 --trials 40 --round-size 8 --population 64 --no-roof \
    --threads 1 --cost-model none --log "$WORK/none.log"
wait_for 'generation [1-9][0-9]*, [0-9]+ schedules measured;' 120
wait_for '^ +cost model off: ranked by measured ancestors' 10
keys q
wait_until 30 "the session ended" eval 'grep -qE "stop the session and quit|EXIT=[0-9]+" "$SCREEN"'
grep -q 'stop the session and quit' "$SCREEN" && keys y
wait_exit 0 60
check_restored
echo PASS
