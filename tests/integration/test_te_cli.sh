#!/usr/bin/env bash
# `tunetop tasks --expr` and `tunetop sketches`: every shipped example prints its DAG and its sketches; bad .te input
# gets one file:line:col line and exit 2.
. "$(dirname "$0")/lib.sh"
EX="$(cd "$(dirname "$0")/../../examples/te" && pwd)"

for f in "$EX"/*.te; do
  if out=$("$TT" tasks --expr "$f" 2>&1) && printf '%s' "$out" | grep -q "workload key te-"; then
    ok "tasks --expr $(basename "$f")"
  else
    fail "tasks --expr $(basename "$f"): $out"
  fi
done

out=$("$TT" tasks --expr "$EX/dense_bias_gelu.te" --set M=4)
printf '%s' "$out" | grep -q "Input X\[4, 768\]" && ok "--set M=4 applied" || fail "--set M=4: $out"
printf '%s' "$out" | grep -q "fusible consumer Y" && ok "dense+GELU: Y is the fusible consumer" || fail "no fusible consumer: $out"
out=$("$TT" tasks --expr "$EX/softmax.te")
printf '%s' "$out" | grep -q "Stage 1: E\[i, j\].*" && printf '%s' "$out" | grep -q "inlinable yes" \
  && ok "softmax: E is inlinable" || fail "softmax analyses: $out"

printf 'input A[4]\nB[i < 4] = A[i + 1]\noutput B\n' >"$WORK/oob.te"
expect_fail 2 "^$WORK/oob.te:2:12: access to A may leave it: index 1 of 1 ranges over \[1, 4\]; valid is \[0, 3\]$" -- "$TT" tasks --expr "$WORK/oob.te"
printf 'input A[4]\nB[i < 4] = A[i]\n' >"$WORK/noout.te"
expect_fail 2 "^$WORK/noout.te:3:1: no 'output' line$" -- "$TT" tasks --expr "$WORK/noout.te"
expect_fail 2 "dense.te:1:1: --set Q: the file has no 'let Q'" -- "$TT" tasks --expr "$EX/dense.te" --set Q=3
expect_fail 2 "dense.te:5:12: dimension 1 of 'X' is -3; it must be positive" -- "$TT" tasks --expr "$EX/dense.te" --set K=-3
expect_fail 2 "--set: 'K' is not NAME=VALUE" -- "$TT" tasks --expr "$EX/dense.te" --set K
expect_fail 2 "missing.te:1:1: cannot open" -- "$TT" tasks --expr "$WORK/missing.te"
expect_fail 2 "not both" -- "$TT" tasks --expr "$EX/dense.te" --network resnet-18

# `tunetop sketches`: every example prints its sketches with a zero-trial default each; on cpu the defaults
# assume this machine's vector width and cores (those `tune` uses), unless --vector / --cores say otherwise
vf=$("$TT" devices | sed -n 's/.* \([0-9]*\) floats per vector register.*/\1/p' | head -1)
nc=$("$TT" devices | sed -n 's/^ *\([0-9]*\) cores, [0-9]* floats per vector register.*/\1/p' | head -1)
for f in "$EX"/*.te; do
  out=$("$TT" sketches --expr "$f" 2>&1)
  n=$(printf '%s' "$out" | sed -n 's/^Sketches of .*: \([0-9]*\)$/\1/p')
  if [ -n "$n" ] && [ "$n" -ge 1 ] && [ "$(printf '%s\n' "$out" | grep -c '^  zero-trial default: ')" -eq "$n" ]; then
    ok "sketches --expr $(basename "$f"): $n sketches, a default each"
  else
    fail "sketches --expr $(basename "$f"): $out"
  fi
done
if [ -n "$vf" ] && [ -n "$nc" ]; then
  mine=$("$TT" sketches --expr "$EX/matmul.te")
  given=$("$TT" sketches --expr "$EX/matmul.te" --vector "$vf" --cores "$nc")
  [ "$mine" = "$given" ] && printf '%s' "$mine" | grep -q "defaults for $vf floats per vector, $nc cores" \
    && ok "sketches on cpu: this machine's $vf floats per vector and $nc cores" || fail "sketches defaults: $mine"
  other=$([ "$vf" = 16 ] && echo 8 || echo 16)
  [ "$("$TT" sketches --expr "$EX/matmul.te" --vector "$other")" != "$mine" ] \
    && ok "sketches --vector $other: other defaults" || fail "--vector $other changed nothing"
else
  fail "tunetop devices gave no vector width or cores"
fi
expect_fail 2 "^tunetop sketches: --vector 0: expected a whole number" -- "$TT" sketches --expr "$EX/matmul.te" --vector 0
expect_fail 2 "^tunetop sketches: give --expr FILE.te" -- "$TT" sketches

finish
