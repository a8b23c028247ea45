#!/usr/bin/env bash
# A real CPU tuning session, killed with SIGKILL mid-run, then resumed with the
# same command: it says what it restored, measures no config twice, and the
# log reads cleanly to the end. Then Ctrl-C (SIGINT) stops gracefully.
. "$(dirname "$0")/lib.sh"

LOG="$WORK/x.log"
args=(tune --headless --tuner random --seed 3 --round-size 8 --trials 48 --log "$LOG"
      --task dense:m=8,n=64,k=64 --task conv2d:n=1,ci=8,h=9,w=9,co=16,kh=3,kw=3,stride=1,pad=1)

"$TT" "${args[@]}" >"$WORK/run1.out" 2>&1 &
pid=$!
# wait until some records are on disk, then kill -9
for _ in $(seq 1 300); do
  n=$("$TT" dump "$LOG" 2>/dev/null | wc -l)
  [ "$n" -ge 10 ] && break
  kill -0 "$pid" 2>/dev/null || break # the session ended already: no record will come
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
before=$("$TT" dump "$LOG" 2>/dev/null | wc -l)
cp "$LOG.tsv" "$WORK/killed.tsv" 2>/dev/null || : >"$WORK/killed.tsv"
if [ "$before" -ge 1 ] && [ "$before" -lt 48 ]; then ok "killed with $before records on disk"; else fail "killed with $before records (want 1..47)"; fi

"$TT" "${args[@]}" >"$WORK/run2.out" 2>&1
rc=$?
[ $rc -eq 0 ] && ok "resumed session finished" || fail "resumed session exit $rc: $(tail -n 5 "$WORK/run2.out")"
grep -q "resumed" "$WORK/run2.out" && ok "says what it restored: $(grep -m1 resumed "$WORK/run2.out")" || fail "no resume message"

"$TT" dump "$LOG" >"$WORK/dump.jsonl" 2>"$WORK/dump.err"
rc=$?
[ $rc -eq 0 ] && ok "log reads cleanly" || fail "dump exit $rc: $(cat "$WORK/dump.err")"
total=$(wc -l <"$WORK/dump.jsonl")
[ "$total" -eq 48 ] && ok "48 records for a budget of 48" || fail "$total records for a budget of 48"
# a task is a workload under one template (the 3x3 conv2d is tuned direct and Winograd)
dups=$(grep -o '"task":"[^"]*"\|"tmpl":"[^"]*"\|"index":[0-9]*' "$WORK/dump.jsonl" | paste -d' ' - - - | sort | uniq -d | wc -l)
[ "$dups" -eq 0 ] && ok "no config measured twice" || fail "$dups configs measured twice"

"$TT" best "$LOG" >"$WORK/best.out" 2>&1 && ok "best prints" || fail "best failed: $(cat "$WORK/best.out")"
grep -q "dense" "$WORK/best.out" && grep -q "conv2d" "$WORK/best.out" && ok "best has both tasks" || fail "best misses a task: $(cat "$WORK/best.out")"

# Ctrl-C: graceful stop, synced records, a resume hint
LOG2="$WORK/y.log"
"$TT" tune --headless --tuner random --round-size 4 --trials 400 --log "$LOG2" --task dense:m=8,n=64,k=64 >"$WORK/int.out" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  n=$("$TT" dump "$LOG2" 2>/dev/null | wc -l)
  [ "$n" -ge 5 ] && break
  kill -0 "$pid" 2>/dev/null || break # the session ended already: no record will come
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"
rc=$?
[ $rc -eq 130 ] && ok "Ctrl-C exits 130" || fail "Ctrl-C exit $rc"
grep -q "resume with: tunetop tune" "$WORK/int.out" && ok "Ctrl-C says how to resume" || fail "no resume hint: $(tail -n 3 "$WORK/int.out")"
"$TT" dump "$LOG2" >/dev/null 2>"$WORK/dump2.err" && ok "interrupted log reads cleanly" || fail "interrupted log: $(cat "$WORK/dump2.err")"

# LOG.tsv (the latency curve, one line per round) goes on with a resumed log: the lines written before the kill
# stay as they were; a new log of the same name (the old one removed) starts it anew instead of continuing the old
# curve: one header, and no line older than the new session
n1=$(wc -l <"$WORK/killed.tsv")
[ "$(grep -c unix_time "$LOG.tsv")" -eq 1 ] && [ "$(wc -l <"$LOG.tsv")" -gt "$n1" ] &&
  head -n "$n1" "$LOG.tsv" | cmp -s - "$WORK/killed.tsv" \
  && ok "the resumed log's curve keeps the first session's $((n1 - 1)) rounds and goes on" || fail "resumed LOG.tsv: $(head -3 "$LOG.tsv")"
rm -f "$LOG"
t3=$(date +%s)
"$TT" "${args[@]}" --trials 8 >"$WORK/run3.out" 2>&1 || fail "a new log: $(tail -n 3 "$WORK/run3.out")"
[ "$(grep -c unix_time "$LOG.tsv")" -eq 1 ] && [ "$(wc -l <"$LOG.tsv")" -ge 2 ] &&
  awk -F'\t' -v t="$t3" 'NR > 1 && $1 + 0 < t { bad = 1 } END { exit bad }' "$LOG.tsv" \
  && ok "a new log starts its curve anew: $(($(wc -l <"$LOG.tsv") - 1)) rounds" || fail "stale LOG.tsv kept: $(cat "$LOG.tsv")"

finish
