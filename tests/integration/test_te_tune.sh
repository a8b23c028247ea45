#!/usr/bin/env bash
# `tunetop tune --expr`: real cpu sessions on softmax, layer-norm, max-pool and
# dense+GELU (small sizes, short budgets), searched by evolution over sketches
# (te.sketch, the default) and, for softmax, by the plain sampler (--tuner
# random: te.cpu). Every record is a schedule with its steps, none is a wrong
# answer, some are measured; `best` shows the steps of the best candidate; a
# resume measures nothing twice; bad input is one line.
. "$(dirname "$0")/lib.sh"
EX="$(cd "$(dirname "$0")/../../examples/te" && pwd)"

run_expr() { # template name sets...
  local tmpl=$1 name=$2
  shift 2
  local log="$WORK/$name.$tmpl.log"
  if "$TT" tune --headless --seed 5 --round-size 4 --trials 8 --timeout 5 --no-roof --log "$log" \
      --expr "$EX/$name.te" "$@" >"$WORK/$name.out" 2>&1; then
    ok "tune --expr $name.te"
  else
    fail "tune --expr $name.te: $(tail -n 5 "$WORK/$name.out")"
    return
  fi
  "$TT" dump "$log" >"$WORK/$name.jsonl" 2>"$WORK/$name.err" || fail "dump $name: $(cat "$WORK/$name.err")"
  local total steps wrong good
  total=$(wc -l <"$WORK/$name.jsonl")
  # (a sketch's naive schedule, the default loop nests, is the empty step list)
  steps=$(grep -c "\"tmpl\":\"$tmpl\".*\"steps\":\"" "$WORK/$name.jsonl")
  wrong=$(grep -c '"err":5,' "$WORK/$name.jsonl")
  good=$(grep -c '"err":0,' "$WORK/$name.jsonl")
  [ "$total" -eq 8 ] && ok "$name: 8 records" || fail "$name: $total records (want 8)"
  [ "$steps" -eq "$total" ] && ok "$name: every record carries its steps" || fail "$name: $steps of $total with steps"
  [ "$wrong" -eq 0 ] && ok "$name: no wrong answer" || fail "$name: $wrong wrong answers"
  [ "$good" -ge 1 ] && ok "$name: $good measured" || fail "$name: no successful candidate"
  "$TT" best "$log" >"$WORK/$name.best" 2>&1 && ok "best $name" || fail "best $name: $(cat "$WORK/$name.best")"
  grep -q "expr:name=$name," "$WORK/$name.best" && grep -Eq "^  steps     ([a-z_]* [0-9]|\(none: the default loop nests\))" "$WORK/$name.best" \
    && grep -q "GFLOPS" "$WORK/$name.best" && ok "best $name shows the steps and GFLOPS" \
    || fail "best $name: $(cat "$WORK/$name.best")"
}

run_expr te.sketch softmax --set M=8 --set N=40
run_expr te.sketch layer_norm --set M=8 --set N=48
run_expr te.sketch max_pool --set C=4 --set H=14 --set W=14
run_expr te.sketch dense_bias_gelu --set M=8 --set N=24 --set K=32
run_expr te.cpu softmax --set M=8 --set N=40 --tuner random
grep -q '"config":"sketch [0-9], schedule [0-9a-f]*"' "$WORK/dense_bias_gelu.jsonl" \
  && ok "sketch candidates say their sketch and schedule" || fail "no sketch config: $(head -c 300 "$WORK/dense_bias_gelu.jsonl")"
grep -q '"config":"sample [0-9]*"' "$WORK/softmax.jsonl" && ok "sampler candidates say their number" \
  || fail "no sample config: $(head -c 300 "$WORK/softmax.jsonl")"

# resume: the same command with a larger budget restores and measures nothing twice
LOG="$WORK/softmax.te.sketch.log"
"$TT" tune --headless --seed 5 --round-size 4 --trials 12 --timeout 5 --no-roof --log "$LOG" \
  --expr "$EX/softmax.te" --set M=8 --set N=40 >"$WORK/resume.out" 2>&1 \
  && ok "resumed session finished" || fail "resume: $(tail -n 5 "$WORK/resume.out")"
grep -q "resumed" "$WORK/resume.out" && ok "says what it restored" || fail "no resume message: $(cat "$WORK/resume.out")"
"$TT" dump "$LOG" >"$WORK/resume.jsonl"
total=$(wc -l <"$WORK/resume.jsonl")
dups=$(grep -o '"index":[0-9]*' "$WORK/resume.jsonl" | sort | uniq -d | wc -l)
[ "$total" -eq 12 ] && [ "$dups" -eq 0 ] && ok "12 records, no schedule measured twice" \
  || fail "$total records, $dups measured twice"

# warm start: the softmax records (an expression found beside the --expr file under this session's --set)
# train the cost model first; the max-pool ones (its own lets differ from the log's) are counted as left out
"$TT" tune --headless --seed 5 --round-size 4 --trials 8 --timeout 5 --no-roof --log "$WORK/warm.log" \
  --expr "$EX/layer_norm.te" --set M=8 --set N=40 --warm-start "$LOG" --warm-start "$WORK/max_pool.te.sketch.log" \
  >"$WORK/warm.out" 2>&1 && ok "warm-started session finished" || fail "warm start: $(tail -n 5 "$WORK/warm.out")"
grep -Eq "^warm start: the cost model learns first from [1-9][0-9]* schedules of 1 other expression \(8 records of expressions not found beside the --expr files are left out\)$" "$WORK/warm.out" \
  && ok "warm start learns from the other expression's records" || fail "warm start line: $(head -n 3 "$WORK/warm.out")"
# resuming that log with itself as --warm-start: its own records are the resume's, not the warm start's
"$TT" tune --headless --seed 5 --round-size 4 --trials 12 --timeout 5 --no-roof --log "$WORK/warm.log" \
  --expr "$EX/layer_norm.te" --set M=8 --set N=40 --warm-start "$WORK/warm.log" >"$WORK/warm2.out" 2>&1 && ! grep -q "^warm start" "$WORK/warm2.out" \
  && ok "a log's own records are no warm start" || fail "resume with warm start: $(head -n 3 "$WORK/warm2.out")"

# bad input: one line, exit 2, no log created
expect_fail 2 "softmax.te:1:1: --set Q: the file has no 'let Q'" -- "$TT" tune --headless --log "$WORK/bad.log" --expr "$EX/softmax.te" --set Q=2
expect_fail 2 "--tuner evolution searches the schedules of --expr tasks" -- "$TT" tune --headless --log "$WORK/bad.log" --expr "$EX/softmax.te" --task dense:m=1,n=8,k=8 --tuner evolution
expect_fail 2 "--population: 1 is out of range .2..65536." -- "$TT" tune --headless --log "$WORK/bad.log" --expr "$EX/softmax.te" --population 1
expect_fail 2 "--eps-greedy: 1.5 is out of range .0..1." -- "$TT" tune --headless --log "$WORK/bad.log" --expr "$EX/softmax.te" --eps-greedy 1.5
expect_fail 2 "--generations: 101 is out of range .0..100." -- "$TT" tune --headless --log "$WORK/bad.log" --expr "$EX/softmax.te" --generations 101
printf 'input A[4]\nB[i < 4] = A[i]\nC[i < 4] = A[i] * 2\noutput B\noutput C\n' >"$WORK/two.te"
expect_fail 2 "two.te: tuning takes one output; this file has 2" -- "$TT" tune --headless --log "$WORK/bad.log" --expr "$WORK/two.te"
expect_fail 2 "is not loaded: tune it with --expr" -- "$TT" tune --headless --log "$WORK/bad.log" --task "expr:name=x,te=te-0000000000000000,flops=1,bytes=8,out=1,red=1"
expect_fail 2 "--warm-start trains the cost model of the evolution of --expr tasks; this session has none" -- "$TT" tune --headless --log "$WORK/bad.log" --expr "$EX/softmax.te" --tuner random --warm-start "$LOG"
expect_fail 2 "--warm-start $WORK/none.log: No such file or directory" -- "$TT" tune --headless --log "$WORK/bad.log" --expr "$EX/softmax.te" --warm-start "$WORK/none.log"
[ ! -e "$WORK/bad.log" ] && ok "no log created by bad input" || fail "bad input created a log"

finish
