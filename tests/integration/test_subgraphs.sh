#!/bin/bash
# tests/integration/test_subgraphs.sh: a network as subgraphs end to end.
# `tasks --subgraphs` lists tiny-resnet's subgraph tasks; `tune --subgraphs`
# with a tiny budget measures every one of them (at least its zero-trial
# default); `run` on the log (chosen by itself from the records, then with
# --subgraphs) builds the program from the tuned schedules, its output matches
# the reference, and the summary has one row per subgraph task; a resumed
# session measures nothing again; bad input is one line.
source "$(dirname "$0")/lib.sh"

NET=tiny-resnet
LOG=$WORK/sg.log

"$TT" tasks --network $NET --subgraphs >"$WORK/tasks.out" 2>&1
n_tasks=$(awk '$1 ~ /^[0-9]+$/ && $4 ~ /^te-/ { n++ } END { print n + 0 }' "$WORK/tasks.out")
if [ "$n_tasks" -ge 5 ] && grep -q "covering all" "$WORK/tasks.out" &&
  grep -qE '^ +[0-9]+ +2 .*batch_norm\+relu' "$WORK/tasks.out" &&
  grep -q 'conv2d+bias_add+relu' "$WORK/tasks.out"; then
  ok "tasks --subgraphs: $n_tasks tasks, identical subgraphs merged (weight 2), conv2d fused with bias and relu"
else
  fail "tasks --subgraphs: $(cat "$WORK/tasks.out")"
fi
if "$TT" tasks --network $NET --subgraphs --show 0 | grep -q '^output '; then
  ok "tasks --subgraphs --show 0 prints an expression"
else
  fail "tasks --subgraphs --show 0"
fi

# a budget of two trials per task, small evolution rounds: every task gets its default measured
trials=$((2 * n_tasks))
if "$TT" tune --network $NET --subgraphs --trials $trials --threads 1 --population 16 --generations 1 \
  --headless --log "$LOG" >"$WORK/tune.out" 2>&1; then
  ok "tune --subgraphs: $trials trials"
else
  fail "tune --subgraphs: $(tail -n 5 "$WORK/tune.out")"
fi
"$TT" best "$LOG" >"$WORK/best.out" 2>&1
with=$(grep -oE '\(([0-9]+) with a result\)' "$WORK/best.out" | grep -oE '[0-9]+')
if [ "${with:-0}" -eq "$n_tasks" ] && grep -q 'te.sketch' "$WORK/best.out"; then
  ok "every subgraph task has a measured schedule ($with of $n_tasks)"
else
  fail "tasks with a result: ${with:-none} of $n_tasks: $(head -n 3 "$WORK/best.out")"
fi

# run: detected from the log's records, then asked for
if "$TT" run --network $NET --log "$LOG" --threads 1 --repeat 2 >"$WORK/run.out" 2>"$WORK/run.err" &&
  grep -q 'running it as subgraphs' "$WORK/run.err" && grep -q 'output matches the reference' "$WORK/run.out"; then
  ok "run (subgraphs found in the log): output matches the reference"
else
  fail "run: $(cat "$WORK/run.out" "$WORK/run.err" | tail -n 5)"
fi
rows=$(grep -cE '^  task [0-9]+ ' "$WORK/run.out")
if [ "$rows" -eq "$n_tasks" ] && grep -q "over 12 subgraphs; estimate" "$WORK/run.out" &&
  grep -q "Tuner's estimate: .* over $n_tasks of $n_tasks subgraph tasks" "$WORK/run.out"; then
  ok "run: the per-subgraph table has $rows rows, the total and the estimate"
else
  fail "run summary: $rows rows: $(cat "$WORK/run.out")"
fi
if "$TT" run --network $NET --subgraphs --log "$LOG" --threads 1 --repeat 1 >"$WORK/run2.out" 2>&1 &&
  grep -q "$n_tasks tasks ($n_tasks from" "$WORK/run2.out"; then
  ok "run --subgraphs: every kernel from the log"
else
  fail "run --subgraphs: $(tail -n 5 "$WORK/run2.out")"
fi

# resume: a budget the log already holds measures nothing new (--trials 1 is raised to one per task)
records=$("$TT" dump "$LOG" | grep -c '"task"')
"$TT" tune --network $NET --subgraphs --trials 1 --threads 1 --population 16 --generations 1 \
  --headless --log "$LOG" >"$WORK/tune2.out" 2>&1
records2=$("$TT" dump "$LOG" | grep -c '"task"')
if [ "$records" -eq "$records2" ] && [ "$records" -ge "$trials" ] &&
  grep -q "fewer than the $n_tasks subgraph tasks: raised to $n_tasks" "$WORK/tune2.out"; then
  ok "resume: $records records, none added; --trials 1 raised to $n_tasks"
else
  fail "resume: $records records before, $records2 after: $(head -n 3 "$WORK/tune2.out")"
fi

# bad input: one line, non-zero exit
expect_fail 2 "--subgraphs tunes a --network" -- "$TT" tune --subgraphs --task dense:m=1,n=8,k=8 --log "$WORK/x.log"
expect_fail 2 "cpu target" -- "$TT" tune --network $NET --subgraphs --target opencl --log "$WORK/x.log"
expect_fail 2 "--subgraphs runs a --network" -- "$TT" run --task dense:m=1,n=8,k=8 --subgraphs --log "$LOG"
expect_fail 2 "no such task ID" -- "$TT" tasks --network $NET --subgraphs --show 99
expect_fail 2 "needs --subgraphs" -- "$TT" tasks --network $NET --show 0
finish
