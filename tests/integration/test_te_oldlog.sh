#!/usr/bin/env bash
# A log written before tensor expressions existed (tests/data/logs/pre_te.log,
# written by tunetop 3754ee6 of 2026-11-22: two template tasks, 12 records,
# no checksums, no session object) still reads, shows the same best
# (pre_te.best: what that build's `best` printed, updated once when a record's
# latency became the median of its repeats instead of their mean), resumes without measuring
# anything twice, and is only ever appended to.
. "$(dirname "$0")/lib.sh"
DATA="$(cd "$(dirname "$0")/../data/logs" && pwd)"
pick() { grep -E '^task|^  (template|best|latency|speed|trials) ' "$1"; }
# pre_te.best numbers tasks as best printed them then, "task K/N" (1-based); best now prints the
# task ID, K - 1, which tasks, the UI, run --profile and export use too
ids() { awk '{ if (match($0, /^task [0-9]+\/[0-9]+/)) { split(substr($0, 6, RLENGTH - 5), a, "/")
                 $0 = "task " (a[1] - 1) substr($0, RLENGTH + 1) } } { print }'; }

cp "$DATA/pre_te.log" "$WORK/old.log"
"$TT" best "$WORK/old.log" >"$WORK/best.out" 2>&1 && ok "best reads the old log" || fail "best: $(cat "$WORK/best.out")"
if diff <(pick "$WORK/best.out") <(ids <"$DATA/pre_te.best") >"$WORK/diff"; then ok "the same best as when it was written"
else fail "best differs: $(cat "$WORK/diff")"; fi
"$TT" dump "$WORK/old.log" >"$WORK/dump.jsonl" 2>"$WORK/dump.err" && ok "dump reads it" || fail "dump: $(cat "$WORK/dump.err")"
[ "$(wc -l <"$WORK/dump.jsonl")" -eq 12 ] && ok "12 records" || fail "$(wc -l <"$WORK/dump.jsonl") records (want 12)"
grep -q '"steps"' "$WORK/dump.jsonl" && fail "an old record shows steps" || ok "no record has steps"

args=(tune --headless --tuner random --seed 11 --round-size 4 --log "$WORK/old.log"
      --task dense:m=8,n=32,k=32 --task conv2d:n=1,ci=4,h=8,w=8,co=8,kh=3,kw=3,stride=1,pad=1)
"$TT" "${args[@]}" --trials 12 >"$WORK/r1.out" 2>&1 && ok "resume with the budget spent" || fail "resume: $(tail -n 5 "$WORK/r1.out")"
grep -q "resumed" "$WORK/r1.out" && ok "says what it restored: $(grep -m1 resumed "$WORK/r1.out")" || fail "no resume message"
"$TT" best "$WORK/old.log" >"$WORK/best2.out" 2>&1
# the resumed session adds the conv2d's Winograd task (a group of alternatives, no records yet):
# the old two tasks read as before
first2() { pick "$1" | ids | sed '/^task 2 /,$d'; }
diff <(first2 "$WORK/best2.out") <(first2 "$DATA/pre_te.best") >/dev/null && ok "resumed: the same best" || fail "best after resume: $(cat "$WORK/best2.out")"
grep -A1 "^task 2  conv2d" "$WORK/best2.out" | grep -q "template  conv2d_winograd.cpu" && ok "and the Winograd task of the conv2d" \
  || fail "no Winograd task after resume: $(cat "$WORK/best2.out")"
"$TT" "${args[@]}" --trials 16 >"$WORK/r2.out" 2>&1 && ok "resume with 4 more trials" || fail "resume 2: $(tail -n 5 "$WORK/r2.out")"
"$TT" dump "$WORK/old.log" >"$WORK/dump2.jsonl" 2>"$WORK/dump.err"
total=$(wc -l <"$WORK/dump2.jsonl")
dups=$(grep -o '"task":"[^"]*"\|"tmpl":"[^"]*"\|"index":[0-9]*' "$WORK/dump2.jsonl" | paste -d' ' - - - | sort | uniq -d | wc -l)
[ "$total" -eq 16 ] && [ "$dups" -eq 0 ] && ok "16 records, none measured twice" || fail "$total records, $dups twice"
size=$(stat -c %s "$DATA/pre_te.log")
cmp -s -n "$size" "$WORK/old.log" "$DATA/pre_te.log" && ok "the old records are untouched (appended after)" \
  || fail "the old part of the log changed"

finish
