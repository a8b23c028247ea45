#!/usr/bin/env bash
# `tunetop tune --expr --target opencl`: real sessions on the OpenCL device
# (PoCL on this project's machines), one-stage expressions and ones with
# intermediate tensors (several kernels, scratch buffers). Every record is a
# te.gpu schedule with its steps, checked by the worker against the
# expression's interpreter (none is a wrong answer); some bind loops to GPU
# indices; `best` shows the steps; a resume measures nothing twice. Skips (77)
# without a device.
. "$(dirname "$0")/lib.sh"
EX="$(cd "$(dirname "$0")/../../examples/te" && pwd)"

need_opencl

run_expr() { # name trials sets...
  local name=$1 trials=$2
  shift 2
  local log="$WORK/$name.log"
  if "$TT" tune --headless --target opencl --seed 5 --round-size 4 --trials "$trials" --timeout 600 --build-timeout 600 --no-roof \
      --log "$log" --expr "$EX/$name.te" "$@" >"$WORK/$name.out" 2>&1; then
    ok "tune --expr $name.te --target opencl"
  else
    fail "tune --expr $name.te --target opencl: $(tail -n 5 "$WORK/$name.out")"
    return
  fi
  "$TT" dump "$log" >"$WORK/$name.jsonl" 2>"$WORK/$name.err" || fail "dump $name: $(cat "$WORK/$name.err")"
  local total steps wrong good bound
  total=$(wc -l <"$WORK/$name.jsonl")
  steps=$(grep -c '"tmpl":"te.gpu","target":"opencl".*"steps":"[a-z]' "$WORK/$name.jsonl")
  wrong=$(grep -c '"err":5,' "$WORK/$name.jsonl")
  good=$(grep -c '"err":0,' "$WORK/$name.jsonl")
  bound=$(grep -c '"steps":"[^"]*bind ' "$WORK/$name.jsonl")
  [ "$total" -eq "$trials" ] && ok "$name: $trials records" || fail "$name: $total records (want $trials)"
  [ "$steps" -eq "$total" ] && ok "$name: every record is a te.gpu schedule with its steps" \
    || fail "$name: $steps of $total te.gpu records with steps"
  [ "$wrong" -eq 0 ] && ok "$name: no wrong answer" || fail "$name: $wrong wrong answers"
  [ "$good" -ge 1 ] && ok "$name: $good measured" || fail "$name: no successful candidate"
  [ "$bound" -ge 1 ] && ok "$name: $bound schedules bind loops to GPU indices" || fail "$name: no schedule binds"
  "$TT" best "$log" >"$WORK/$name.best" 2>&1 && ok "best $name" || fail "best $name: $(cat "$WORK/$name.best")"
  grep -q "expr:name=$name," "$WORK/$name.best" && grep -q "^  template  te.gpu" "$WORK/$name.best" \
    && grep -q "^  steps     [a-z_]* [0-9]" "$WORK/$name.best" && ok "best $name shows te.gpu and the steps" \
    || fail "best $name: $(cat "$WORK/$name.best")"
}

run_expr matmul 8 --set N=24
run_expr dense 6 --set M=3 --set N=20 --set K=17
run_expr max_pool 6 --set C=3 --set H=13 --set W=11
# expressions with intermediates: several kernels in order, scratch buffers (the launch plan)
run_expr softmax 6 --set M=8 --set N=40
run_expr layer_norm 6 --set M=8 --set N=48
run_expr dense_bias_gelu 6 --set M=4 --set N=24 --set K=16

# resume: the same command with a larger budget restores and measures nothing twice
LOG="$WORK/dense.log"
"$TT" tune --headless --target opencl --seed 5 --round-size 4 --trials 10 --timeout 600 --build-timeout 600 --no-roof --log "$LOG" \
  --expr "$EX/dense.te" --set M=3 --set N=20 --set K=17 >"$WORK/resume.out" 2>&1 \
  && ok "resumed session finished" || fail "resume: $(tail -n 5 "$WORK/resume.out")"
grep -q "resumed" "$WORK/resume.out" && ok "says what it restored" || fail "no resume message: $(cat "$WORK/resume.out")"
"$TT" dump "$LOG" >"$WORK/resume.jsonl"
total=$(wc -l <"$WORK/resume.jsonl")
dups=$(grep -o '"index":[0-9]*' "$WORK/resume.jsonl" | sort | uniq -d | wc -l)
[ "$total" -eq 10 ] && [ "$dups" -eq 0 ] && ok "10 records, no schedule measured twice" \
  || fail "$total records, $dups measured twice"
# --tuner evolution: the sketch search on the GPU (template te.sketch.gpu): a
# cache_write stage per thread and bound tiles; multi-stage ones as a launch plan
run_sketch() { # name sets...
  local name=$1
  shift
  local log="$WORK/$name.sketch.log"
  if "$TT" tune --headless --target opencl --tuner evolution --seed 5 --round-size 4 --trials 8 --timeout 600 --build-timeout 600 --no-roof \
      --log "$log" --expr "$EX/$name.te" "$@" >"$WORK/$name.sketch.out" 2>&1; then
    ok "tune --expr $name.te --target opencl --tuner evolution"
  else
    fail "evolution $name: $(tail -n 5 "$WORK/$name.sketch.out")"
    return
  fi
  "$TT" dump "$log" >"$WORK/$name.sketch.jsonl"
  local total sk wrong good
  total=$(wc -l <"$WORK/$name.sketch.jsonl")
  sk=$(grep -c '"tmpl":"te.sketch.gpu","target":"opencl".*"config":"sketch [0-9], schedule.*"steps":"' "$WORK/$name.sketch.jsonl")
  wrong=$(grep -c '"err":5,' "$WORK/$name.sketch.jsonl")
  good=$(grep -c '"err":0,' "$WORK/$name.sketch.jsonl")
  [ "$total" -eq 8 ] && [ "$sk" -eq 8 ] && ok "$name: 8 te.sketch.gpu records with their sketch and steps" \
    || fail "$name: $sk of $total te.sketch.gpu records"
  [ "$wrong" -eq 0 ] && ok "$name (evolution): no wrong answer" || fail "$name (evolution): $wrong wrong answers"
  [ "$good" -ge 1 ] && ok "$name (evolution): $good measured" || fail "$name (evolution): none measured"
}
run_sketch matmul --set N=24
grep -q '"steps":"cache_write 0; [^"]*bind 1 0 0' "$WORK/matmul.sketch.jsonl" \
  && ok "matmul (evolution): the accumulation cached per thread, tiles bound" \
  || fail "matmul (evolution): no cached, bound schedule: $(head -c 400 "$WORK/matmul.sketch.jsonl")"
run_sketch softmax --set M=8 --set N=40

finish
