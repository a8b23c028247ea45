#!/bin/bash
# `tune --expr` in the terminal UI: the task is "expr softmax"; b opens its
# best candidate with the steps, the loop nest they replay to and the
# generated source; b closes it; q quits. A resumed session shows the
# restored best the same way. Then `tunetop view` of the log shows
# the best candidate's steps (the loop nest needs the expression, which a log
# does not hold: the page says so).
set -u
. "$(dirname "$0")/lib.sh"
EX="$(cd "$(dirname "$0")/../../examples/te" && pwd)"

LOG=$WORK/expr.log
start 120 40 "$TT" tune --expr "$EX/softmax.te" --set M=8 --set N=40 --trials 400 --round-size 4 --no-roof --log "$LOG"
wait_for 'expr softmax' 20
# b until the UI has a successful candidate (before that it says there is none)
wait_until 120 "the best page" eval 'grep -q "Best candidate of task 0 expr softmax" "$SCREEN" || { keys b; false; }'
wait_for 'Steps: [a-z_]+ [0-9]' 5
wait_for 'loop nest \(the steps replayed\)' 5
wait_for '^│?(for|init|store|update) ' 5
save expr_best_120x40
keys b
wait_until 5 "the best page closed" eval '! grep -q "Best candidate of task" "$SCREEN"'
keys q
wait_for 'stop the session and quit' 5
keys y
wait_exit 0 60
check_restored

# a resumed session whose budget the log already spent measures nothing: the
# best page shows the best the engine restored, with its loop nest
m=$("$TT" dump "$LOG" | grep -c '^{')
start 120 40 "$TT" tune --expr "$EX/softmax.te" --set M=8 --set N=40 --trials "$m" --round-size 4 --no-roof --log "$LOG"
wait_for 'session finished' 20
keys b
wait_for 'Best candidate of task 0 expr softmax' 10
wait_for 'loop nest \(the steps replayed\)' 5
wait_for '^│?(for|init|store|update) ' 5
keys b
keys q
wait_exit 0 60
check_restored

start 120 40 "$TT" view "$LOG"
wait_for 'expr softmax' 10
keys b
wait_for 'Best candidate of task 0 expr softmax' 10
wait_for 'Steps: [a-z_]+ [0-9]' 5
wait_for 'the expression is not loaded here' 5
save expr_view_best_120x40
keys Escape
wait_until 5 "the best page closed" eval '! grep -q "Best candidate of task" "$SCREEN"'
keys q
wait_exit 0 10
check_restored
echo PASS
