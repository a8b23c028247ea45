#!/bin/bash
# The error inspector on a task whose candidates all fail (every compile
# exceeds a 10 ms build timeout): groups by class and reason, a group's
# candidates, one candidate's message and regenerated source, the bug
# report file; Ctrl-C stops gracefully and restores the terminal. Then
# `tunetop view` shows the same log read-only and follows it, a resumed
# session shows the restored failures, and a bad log is one line
# and exit status 1.
set -u
. "$(dirname "$0")/lib.sh"

LOG=$WORK/errors.log
# a budget the session cannot spend before the Ctrl-C below: every trial fails fast, and on a loaded
# machine the keys below take longer than 500 trials did (the session ended first, exit 1)
start 120 40 "$TT" tune --task dense:m=16,n=32,k=32 --trials 100000 --round-size 8 --tuner random \
    --build-timeout 0.01 --log "$LOG"

wait_for 'Progress' 20
wait_until 90 "failures counted" eval '[ "$(awk '"'"'/^[ >] +0 /{print $(NF-2)}'"'"' "$SCREEN")" -ge 8 ] 2>/dev/null'
keys e
wait_for 'Errors of task 0' 5
wait_for 'BUILD_TIMEOUT' 5
save inspector_groups_120x40
# colours are on by default (semantic: failures, titles, key bar)
tm capture-pane -e -p -t main | grep -qE $'\e\\[([0-9]+;)*3[0-7](;[0-9]+)*m' || fail "no colours by default"
resize 80 24
wait_for 'BUILD_TIMEOUT' 5
save inspector_groups_80x24
resize 200 60
wait_for 'BUILD_TIMEOUT' 5
save inspector_groups_200x60
resize 120 40
keys Enter
wait_for 'BUILD_TIMEOUT: .*\([0-9]+\)' 5
wait_for '#[0-9]+ +' 5
save inspector_candidates_120x40
keys Enter
wait_for 'Error: BUILD_TIMEOUT' 5
wait_for 'generated source' 5
save inspector_source_120x40
resize 80 24
wait_for 'Error: BUILD_TIMEOUT' 5
save inspector_source_80x24
resize 200 60
wait_for 'Error: BUILD_TIMEOUT' 5
save inspector_source_200x60
keys w
wait_for 'wrote .*tunetop-bug-task0-[0-9]+\.txt' 5
report=$(ls "$WORK"/tunetop-bug-task0-*.txt 2>/dev/null | head -1)
[ -n "$report" ] || fail "no bug report file in $WORK"
grep -q 'BUILD_TIMEOUT' "$report" || fail "report lacks the error class"
grep -q -- '--- generated source ---' "$report" || fail "report lacks the source"
grep -q 'cannot regenerate' "$report" && fail "report could not regenerate the source"
echo "report: $(wc -l <"$report") lines"
keys Escape
keys Escape
wait_for 'Count +Class +Reason' 5

# Ctrl-C: the same graceful stop as q, with the exit code of an interrupt (128 + SIGINT)
keys C-c
wait_exit 130 60
check_restored
"$TT" dump "$LOG" >/dev/null 2>"$WORK/dump.err" || fail "tunetop dump failed: $(cat "$WORK/dump.err")"

# the same log in `tunetop view`
start 100 30 "$TT" view "$LOG"
wait_for 'logged' 10
wait_for 'log span' 5
keys e
wait_for 'BUILD_TIMEOUT' 5
save view_inspector_100x30
keys p
wait_for 'read-only view' 5
keys q
wait_for 'Progress' 5
keys q
wait_exit 0 10
check_restored

# the view follows the log while a session appends to it
n=$("$TT" dump "$LOG" | grep -c '^{')
start 100 30 "$TT" view "$LOG"
wait_for "Trials $n " 10
"$TT" tune --task dense:m=16,n=32,k=32 --trials $((n + 16)) --round-size 8 --tuner random --build-timeout 0.01 \
    --log "$LOG" --headless >"$WORK/resume.txt" 2>&1 &
tune_pid=$!
wait_until 60 "the view shows the appended records" eval \
    '[ "$(grep -oE "^Trials [0-9]+" "$SCREEN" | grep -oE "[0-9]+")" -gt '"$n"' ] 2>/dev/null'
wait "$tune_pid"
echo "follow: the view grew past $n records"

keys q
wait_exit 0 10

# a resumed session whose budget the log already spent measures nothing: what
# its inspector shows came from the engine's restored trials (no second read)
m=$("$TT" dump "$LOG" | grep -c '^{')
start 120 40 "$TT" tune --task dense:m=16,n=32,k=32 --trials "$m" --round-size 8 --tuner random \
    --build-timeout 0.01 --log "$LOG"
wait_for 'session finished' 20
keys e
wait_for "Errors of task 0 .*: [0-9]+ failed of $m trials" 5
echo "resume: the inspector shows the $m restored trials"
save resumed_inspector_120x40
keys Escape
keys q
wait_exit 0 60
check_restored

# a fatal signal still restores the terminal
start 100 30 "$TT" view "$LOG"
wait_for 'logged' 10
pane=$(tm display-message -p -t main '#{pane_pid}')
pid=$(pgrep -P "$pane" | head -1)
[ -n "$pid" ] || fail "no tunetop view process under the pane"
kill -SEGV "$pid"
wait_exit 139 10
check_restored

# no UTF-8: ASCII plots and boxes; NO_COLOR: monochrome
start 100 30 env LANG=C NO_COLOR=1 "$TT" view "$LOG"
wait_for 'logged' 10
wait_for '^\+ Task 0' 5
save view_ascii_100x30
LC_ALL=C grep -q $'[\x80-\xff]' "$SCREEN" && fail "non-ASCII characters without a UTF-8 locale"
tm capture-pane -e -p -t main | grep -qE $'\e\\[([0-9]+;)*3[0-7](;[0-9]+)*m' && fail "colours despite NO_COLOR"
keys q
wait_exit 0 10
check_restored

# a bad log: one clear line, exit 1
echo "not a log" >"$WORK/bad.log"
"$TT" view "$WORK/bad.log" >"$WORK/out.txt" 2>"$WORK/err.txt"
rc=$?
[ $rc = 1 ] || fail "tunetop view of a bad log exited $rc"
[ "$(wc -l <"$WORK/err.txt")" = 1 ] || fail "expected one line, got: $(cat "$WORK/err.txt")"
grep -q 'bad.log' "$WORK/err.txt" || fail "the message does not name the log: $(cat "$WORK/err.txt")"
echo "bad log: $(cat "$WORK/err.txt")"
echo PASS
