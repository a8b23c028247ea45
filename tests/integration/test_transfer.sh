#!/usr/bin/env bash
# --transfer: a session on a new task learns from the records an earlier
# session wrote to the same log for another task of the same template (its
# cost model says so in the headless output); without --transfer it does not.
# Also: the tasks of one session learn from each other without any option.
. "$(dirname "$0")/lib.sh"

run() { "$TT" tune --headless --seed 5 --round-size 16 --log "$WORK/x.log" "$@" >"$WORK/out" 2>&1; }

for transfer in no yes; do
  rm -f "$WORK/x.log"
  run --tuner random --trials 16 --task dense:m=1,n=64,k=64 || fail "first session: $(tail -n 3 "$WORK/out")"
  extra=()
  [ "$transfer" = yes ] && extra=(--transfer)
  # the budget counts the log's 16 restored trials of the other task too
  run --tuner xgb --trials 32 --task dense:m=1,n=128,k=64 "${extra[@]}" || fail "second session: $(tail -n 3 "$WORK/out")"
  line=$(grep -m 1 "model:" "$WORK/out" | sed "s/^ *//")
  if [ "$transfer" = yes ]; then
    echo "$line" | grep -q "(16 of other tasks)" && ok "--transfer: $line" || fail "--transfer: model line '$line'"
  else
    echo "$line" | grep -q "of other tasks" && fail "no --transfer but: $line" || ok "without --transfer: $line"
  fi
done

# one session, two tasks of the dense template: the second task's first plan knows the first's results
rm -f "$WORK/x.log"
run --tuner xgb --scheduler round-robin --trials 32 --task dense:m=1,n=64,k=64 --task dense:m=1,n=128,k=64 ||
  fail "two-task session: $(tail -n 3 "$WORK/out")"
grep -qE "\([0-9]+ of other tasks\)" "$WORK/out" && ok "tasks of a session learn from each other: $(grep -m 1 'of other tasks' "$WORK/out")" ||
  fail "no model line mentions the other task: $(grep 'model:' "$WORK/out")"

echo "passed $passed, failed $failed"
[ "$failed" -eq 0 ]
