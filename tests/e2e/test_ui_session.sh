#!/bin/bash
# A live CPU session with two tasks in the terminal UI: the table fills,
# pausing task 0 stops its trial count while task 1 grows, resuming it
# restarts it, priority shows at once, help and curves render at 80x24 and
# 200x60, below 80x24 the UI says so, q stops gracefully and restores the
# terminal, and the log reads cleanly.
set -u
. "$(dirname "$0")/lib.sh"

LOG=$WORK/session.log
start 120 40 "$TT" tune --task dense:m=32,n=64,k=64 --task batch_matmul:b=2,m=32,n=32,k=32 \
    --trials 2000 --round-size 4 --tuner random --log "$LOG"

wait_for 'Progress' 20
wait_for 'dense' 5
# both tasks measured at least once
wait_until 90 "both tasks have trials" eval '[ "$(field 0 trials)" -gt 0 ] 2>/dev/null && [ "$(field 1 trials)" -gt 0 ] 2>/dev/null'
save table_120x40

# pause task 0 (selected by default)
keys p
wait_until 5 "task 0 shows pausing/paused" eval '[ "$(field 0 state)" = pausing ] || [ "$(field 0 state)" = paused ]'
wait_until 60 "task 0 paused" eval '[ "$(field 0 state)" = paused ]'
# let task 1 run a round, then take task 0's count and check it holds while task 1 grows
t1=$(field 1 trials)
wait_until 60 "task 1 grows while task 0 is paused" eval '[ "$(field 1 trials)" -gt '"$t1"' ]'
a0=$(field 0 trials)
t1=$(field 1 trials)
wait_until 60 "task 1 grows again" eval '[ "$(field 1 trials)" -gt $((t1 + 3)) ]'
[ "$(field 0 trials)" = "$a0" ] || fail "task 0 measured while paused ($a0 -> $(field 0 trials))"
[ "$(field 0 state)" = paused ] || fail "task 0 no longer shown paused"
echo "paused: task 0 stayed at $a0 trials while task 1 went $t1 -> $(field 1 trials)"

# resume
keys p
wait_until 60 "task 0 resumes" eval '[ "$(field 0 trials)" -gt '"$a0"' ]'
echo "resumed: task 0 at $(field 0 trials) trials"

# priority shows within a refresh
keys +
wait_until 2 "priority +1 shown" eval '[ "$(awk '"'"'/^[ >] +0 /{print $NF}'"'"' "$SCREEN")" = "+1" ]'

# stop task 1 for good
keys j
keys s
wait_for 'stop task 1 for good' 5
keys y
wait_until 60 "task 1 stopped" eval '[ "$(field 1 state)" = stopped ]'
n1=$(field 1 trials)
keys k

# curves and table at 200x60, then 80x24, then too small, then back
resize 200 60
wait_for 'GFLOPS per trial' 5
wait_for 'Est. total latency \((ms|us)(, log)?\) over time' 5
save table_curves_200x60
resize 80 24
wait_for 'Progress' 5
wait_until 5 "80x24 frame is complete" grep -q 'q:Quit' "$SCREEN"
grep -q 'too small' "$SCREEN" && fail "80x24 is not too small"
save table_curves_80x24
resize 70 20
wait_for 'terminal too small: need 80x24' 5
resize 80 24
wait_for 'Progress' 5
keys '?'
wait_for 'pause / resume the selected' 5
save help_80x24
resize 200 60
wait_for 'Current: GFLOPS of the last successful config' 5
save help_200x60
keys Escape
wait_for 'Progress.*Best' 5
keys c
wait_for 'curves hidden' 5
keys c
wait_for 'GFLOPS per trial' 5

[ "$(field 1 trials)" = "$n1" ] || fail "task 1 measured after it was stopped"

# quit: asks first, then a graceful stop, terminal restored, exit line printed by the app
keys q
wait_for 'stop the session and quit' 5
keys y
wait_exit 0 60
check_restored
grep -qE 'trials' "$SCREEN" || fail "no exit line from the app"

# the log reads cleanly
"$TT" dump "$LOG" >"$WORK/dump.txt" 2>"$WORK/dump.err" || fail "tunetop dump failed: $(cat "$WORK/dump.err")"
n=$(grep -c '^{' "$WORK/dump.txt")
[ "$n" -gt 0 ] || fail "no records in the log"
echo "log: $n records read back"
echo PASS
