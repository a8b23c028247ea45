#!/usr/bin/env bash
# Groups of alternatives through the real binary: a conv2d 3x3 stride 1 is
# tuned as two tasks (direct and Winograd) by default, the estimate counts the
# workload once with the faster best, `best` names both members, a resume
# matches records by key and template, `run` builds the faster, and
# --template keeps one.
. "$(dirname "$0")/lib.sh"

LOG="$WORK/g.log"
S1=conv2d:n=1,ci=16,h=12,w=12,co=16,kh=3,kw=3,stride=1,pad=1
S2=conv2d:n=1,ci=16,h=12,w=12,co=16,kh=3,kw=3,stride=2,pad=1
args=(tune --headless --tuner random --seed 2 --round-size 4 --table-every 1000 --log "$LOG" --task "$S1" --task "$S2")

"$TT" "${args[@]}" --trials 24 >"$WORK/t1.out" 2>&1 || { fail "tune: $(tail -3 "$WORK/t1.out")"; finish; exit 1; }
grep -q "Task  3/ 3" "$WORK/t1.out" && ok "two workloads, three tasks (the stride-1 one twice)" \
  || fail "want 3 tasks: $(grep -m3 "Task" "$WORK/t1.out")"
grep -q "3x3 wino" "$WORK/t1.out" && ok "the Winograd task is labelled: $(grep -m1 -o "conv2d [^|]*wino" "$WORK/t1.out")" \
  || fail "no wino label: $(cat "$WORK/t1.out")"
grep -qE "Current/Best: +[0-9.]+/ +[0-9.]+ effective GFLOPS" "$WORK/t1.out" && ok "its progress line says effective GFLOPS" \
  || fail "no effective GFLOPS line"
grep -q "counts once in the estimate" "$WORK/t1.out" && ok "the table says how the group counts" || fail "no group note"

"$TT" best "$LOG" >"$WORK/best.out" 2>&1
[ "$(grep -c "^  group" "$WORK/best.out")" -eq 2 ] && ok "best names the group on both members" \
  || fail "best group lines: $(cat "$WORK/best.out")"
grep -q "template  conv2d_winograd.cpu" "$WORK/best.out" && grep -q "template  conv2d_nchwc.cpu" "$WORK/best.out" \
  && ok "best lists both templates as tasks" || fail "best templates: $(grep template "$WORK/best.out")"
grep -qE "^  speed     [0-9.]+ effective GFLOPS" "$WORK/best.out" && ok "best: effective GFLOPS for Winograd" \
  || fail "best speed lines: $(grep speed "$WORK/best.out")"
# the estimate: the faster member of the group plus the other task, each counted once
"$TT" best --json "$LOG" >"$WORK/best.json"
[ "$(wc -l <"$WORK/best.json")" -eq 3 ] && ok "best --json: 3 tasks" || fail "best --json: $(cat "$WORK/best.json")"
want=$(awk -F'"latency_ms":' '{ split($2, a, ","); l[NR] = a[1] } END { m = l[1] < l[2] ? l[1] : l[2]; printf "%.4g", m + l[3] }' "$WORK/best.json")
got=$(sed -n 's/^estimated total latency \([0-9.e+-]*\) ms.*/\1/p' "$WORK/best.out")
awk -v a="$got" -v b="$want" 'BEGIN { exit !(a > 0 && (a - b) / b < 1e-3 && (b - a) / b < 1e-3) }' \
  && ok "estimate $got ms = min of the group + the other task" || fail "estimate $got ms, want $want ms"

# resume: the same tasks, records matched by key and template, no config measured twice
"$TT" "${args[@]}" --trials 36 >"$WORK/t2.out" 2>&1 || fail "resume: $(tail -3 "$WORK/t2.out")"
grep -q "of 3 tasks restored" "$WORK/t2.out" && ok "resume: $(grep -m1 -o "resumed.*restored" "$WORK/t2.out")" \
  || fail "resume message: $(grep -m1 resumed "$WORK/t2.out")"
"$TT" dump "$LOG" >"$WORK/dump.jsonl"
[ "$(wc -l <"$WORK/dump.jsonl")" -eq 36 ] && ok "36 records for a budget of 36" || fail "$(wc -l <"$WORK/dump.jsonl") records"
dups=$(grep -o '"task":"[^"]*"\|"tmpl":"[^"]*"\|"index":[0-9]*' "$WORK/dump.jsonl" | paste -d' ' - - - | sort | uniq -d | wc -l)
[ "$dups" -eq 0 ] && ok "no config of a task measured twice" || fail "$dups configs measured twice"

# run builds the faster member
"$TT" best --json "$LOG" >"$WORK/best.json"
faster=$(awk 'NR <= 2 { split($0, a, "\"latency_ms\":"); split(a[2], b, ","); match($0, /"tmpl":"[^"]*"/)
                        if (best == "" || b[1] + 0 < best) { best = b[1] + 0; t = substr($0, RSTART + 8, RLENGTH - 9) } }
                        END { print t }' "$WORK/best.json")
used=$(grep '"used_by_run":true' "$WORK/best.json" | grep -c 'kh=3,kw=3,stride=1')
grep '"used_by_run":true' "$WORK/best.json" | grep -q "\"tmpl\":\"$faster\"" && [ "$used" -eq 1 ] && \
  grep -q '"alternatives":\[1\]' "$WORK/best.json" && ok "best --json: the faster member, $faster, is used_by_run" \
  || fail "best --json group fields: $(cut -c1-200 "$WORK/best.json")"
if "$TT" run --task "$S1" --log "$LOG" --keep "$WORK/prog" --repeat 1 --min-repeat-ms 0 >"$WORK/run.out" 2>&1; then
  grep -q "output matches the reference" "$WORK/run.out" && ok "run: output matches" || fail "run: $(cat "$WORK/run.out")"
  grep -rqs "$faster" "$WORK/prog" && ok "run built the faster template, $faster" \
    || fail "the program has no $faster kernel: $(grep -rho "conv2d_[a-z]*\.cpu" "$WORK/prog" | sort -u | tr '\n' ' ')"
else
  fail "run: $(tail -3 "$WORK/run.out")"
fi

# --template keeps one template: two tasks
"$TT" tune --headless --tuner random --seed 2 --round-size 4 --trials 4 --log "$WORK/one.log" --task "$S1" --task "$S2" \
  --template conv2d_nchwc.cpu >"$WORK/t3.out" 2>&1
grep -q "Task  2/ 2" "$WORK/t3.out" && ! grep -q wino "$WORK/t3.out" && ok "--template conv2d_nchwc.cpu: 2 tasks" \
  || fail "--template: $(grep -m3 Task "$WORK/t3.out")"
finish
