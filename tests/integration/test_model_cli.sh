#!/usr/bin/env bash
# tests/integration/test_model_cli.sh: ONNX models through the command line as
# a user runs them: run --model (the program built with default kernels,
# checked against the reference executor and against ONNX Runtime's output
# that tests/data/onnx holds), export --model built with cmake alone and
# called from a C program of the user's, best --model (the model's tasks with
# tasks --model's IDs, each with its best in a log), and bad input refused in
# one line.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DATA=$HERE/../data/onnx

# npy_close A.npy B.npy TOL: both float32 arrays of one shape, max |a - b| <= TOL * max |b|
npy_close() {
  python3 - "$@" <<'PY'
import ast, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + n].decode())
    assert h["descr"] == "<f4" and not h["fortran_order"], h
    data = b[10 + n:]
    return h["shape"], struct.unpack("<%df" % (len(data) // 4), data)
(sa, a), (sb, b) = load(sys.argv[1]), load(sys.argv[2])
scale = max(abs(x) for x in b) or 1.0
err = max(abs(x - y) for x, y in zip(a, b)) / scale
print("shapes %s %s, error %.3g" % (sa, sb, err))
sys.exit(0 if sa == sb and len(a) == len(b) and err <= float(sys.argv[3]) else 1)
PY
}

# ---- tasks --model and tune --model: the template tasks, tuned into a log ----
out=$("$TT" tasks --model "$DATA/tiny_cnn.onnx" 2>&1)
if grep -q "depthwise_conv2d:n=1,ci=16,h=8,w=8,mult=1,kh=3,kw=3.*relu6=1" <<<"$out" &&
  grep -q "dense:m=1,n=10,k=32,bias=1" <<<"$out" && grep -q "MaxPool" <<<"$out" &&
  grep -q "^Total: 8 tasks for 6 layers" <<<"$out"; then
  ok "tasks --model: conv2d, depthwise (ReLU6 fused), dense, the untuned ops and the total"
else
  fail "tasks --model: $out"
fi
out=$("$TT" tasks --model "$DATA/tiny_transformer.onnx" 2>&1)
grep -q "dense:m=16,n=96,k=32,bias=1" <<<"$out" && grep -q "Softmax" <<<"$out" &&
  ok "tasks --model of a transformer: MatMul by a weight and its bias Add as one dense task" ||
  fail "tasks --model transformer: $out"
grep -q "batch_matmul:b=4,m=16,n=16,k=8" <<<"$out" && grep -q "batch_matmul:b=4,m=16,n=8,k=16" <<<"$out" &&
  ! grep -qE "^ +[0-9]+  MatMul" <<<"$out" &&
  ok "attention's two MatMuls of activations are batch_matmul tasks" || fail "tasks --model transformer, attention: $out"
if "$TT" tune --model "$DATA/tiny_cnn.onnx" --trials 12 --headless --seed 3 --log "$WORK/tc.log" >"$WORK/tune.out" 2>&1; then
  ok "tune --model: $(tail -n 1 "$WORK/tune.out")"
else
  fail "tune --model: $(tail -n 5 "$WORK/tune.out")"
fi
out=$("$TT" run --model "$DATA/tiny_cnn.onnx" --log "$WORK/tc.log" --repeat 2 --profile 2>&1)
grep -q "6 from $WORK/tc.log, 0 at their default config" <<<"$out" && grep -q "Output matches the reference" <<<"$out" &&
  ok "run --model --log: every task from the log, the output checked" || fail "run --model --log: $out"
# conv -> depthwise -> 1x1 conv: the tensors between them go from kernel to kernel in their blocked
# layouts (the tuned configs' channel blocks differ), and the output above still matched
grep -qE "^[1-9][0-9]* kernel outputs handed to the next kernel blocked" <<<"$out" &&
  ok "run --model: $(grep -m1 'handed to the next kernel' <<<"$out")" || fail "run --model, blocked handoffs: $out"
expect_fail 2 "--model takes --input-shape" -- "$TT" tune --model "$DATA/tiny_cnn.onnx" --network resnet-18

# ---- best --model: the model's tasks with tasks --model's IDs, each with its best in the log ----
# "ID template key" per task, from tasks --model's table and from best --model --json
"$TT" tasks --model "$DATA/tiny_cnn.onnx" 2>&1 | awk '$1 ~ /^[0-9]+$/ && NF >= 6 { print $1, $4, $6 }' >"$WORK/ids.tasks"
json_ids() { python3 -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    print(o["id"], o["tmpl"], o["task"])'; }
if "$TT" best --model "$DATA/tiny_cnn.onnx" --json "$WORK/tc.log" >"$WORK/best.json" 2>"$WORK/best.err" &&
  json_ids <"$WORK/best.json" >"$WORK/ids.best" && [ "$(wc -l <"$WORK/ids.tasks")" -eq 8 ] &&
  cmp -s "$WORK/ids.tasks" "$WORK/ids.best"; then
  ok "best --model --json: the 8 tasks with the IDs, templates and keys of tasks --model"
else
  fail "best --model --json IDs: $(diff "$WORK/ids.tasks" "$WORK/ids.best" 2>&1 | head -n 5) $(cat "$WORK/best.err")"
fi
out=$("$TT" best --model "$DATA/tiny_cnn.onnx" "$WORK/tc.log" 2>&1)
if [ "$(grep -c '^task [0-9]' <<<"$out")" -eq 8 ] && grep -q "^estimated kernel latency .* over 6 workloads" <<<"$out" &&
  grep -q "^untuned ops: 3 in 3 kinds" <<<"$out" && ! grep -q "no record" <<<"$out"; then
  ok "best --model: $(grep '^estimated' <<<"$out")"
else
  fail "best --model of the tuned log: $out"
fi
# a log of one task of the model: the others say they run their default, the estimate leaves them out
DENSE=dense:m=1,n=10,k=32,bias=1
"$TT" tune --task "$DENSE" --trials 2 --headless --no-roof --log "$WORK/dense.log" >/dev/null 2>&1
out=$("$TT" best --model "$DATA/tiny_cnn.onnx" "$WORK/dense.log" 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c 'best      no record: runs its zero-trial default' <<<"$out")" -eq 5 ] &&
  grep -A3 "^task 7  $DENSE" <<<"$out" | grep -q "config index" &&
  grep -q "5 workloads at their zero-trial default left out" <<<"$out" &&
  grep -q "ID 2 (conv2d_winograd.cpu) tunes the same workload; none of them has a result yet" <<<"$out"; then
  ok "best --model of a log of one task: 5 workloads at their default, left out of the estimate"
else
  fail "best --model of a one-task log exited $rc: $out"
fi
# a log of another model: one line says so, the table is still printed
"$TT" tune --task dense:m=16,n=96,k=32,bias=1 --trials 2 --headless --no-roof --log "$WORK/other.log" >/dev/null 2>&1
"$TT" best --model "$DATA/tiny_cnn.onnx" "$WORK/other.log" >"$WORK/other.out" 2>"$WORK/other.err"
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c . "$WORK/other.err")" -eq 1 ] && grep -q "no record of the log is of a workload" "$WORK/other.err" &&
  [ "$(grep -c '^task [0-9]' "$WORK/other.out")" -eq 8 ] && grep -q "^no estimate" "$WORK/other.out"; then
  ok "best --model of another model's log: $(cat "$WORK/other.err")"
else
  fail "best --model of another model's log exited $rc: $(cat "$WORK/other.err" "$WORK/other.out")"
fi

# ---- run --model: the models, their outputs against ONNX Runtime's ----
for m in tiny_cnn tiny_transformer tiny_se; do
  inputs=()
  for f in "$DATA/$m".*.npy; do
    name=$(basename "$f" .npy); name=${name#"$m".}
    [ "$name" = ort_output ] || inputs+=(--input "$name=$f")
  done
  out=$("$TT" run --model "$DATA/$m.onnx" "${inputs[@]}" --output-dir "$WORK/$m" --repeat 2 --profile 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -q "Output matches the reference" <<<"$out" && grep -q "^Kernel " <<<"$out"; then
    ok "run --model $m: $(grep -m1 Latency <<<"$out")"
  else
    fail "run --model $m exited $rc: $out"
  fi
  if cmp=$(npy_close "$WORK/$m/output.npy" "$DATA/$m.ort_output.npy" 1e-4 2>&1); then
    ok "$m: output against ONNX Runtime's: $cmp"
  else
    fail "$m: output against ONNX Runtime's: $cmp"
  fi
  # tiny_se at 14x14 over 64 channels (whole channel blocks, rows of whole register tiles): a 1x1
  # convolution reads its input, and one its residual, in the producer's own buffer (the output above
  # still matched); its lone HardSwishes between kernels run in place, so 3 outputs are never unpacked
  if [ $m = tiny_se ]; then
    grep -qE "^[3-9] kernel outputs handed to the next kernel blocked.*; [1-9][0-9]* tensors read in" <<<"$out" &&
      ok "tiny_se: $(grep -m1 'handed to the next kernel' <<<"$out")" || fail "tiny_se, borrowed buffers: $out"
  fi
done

# ---- export --model: cmake alone, a C program of the user's reproduces run's output ----
if "$TT" export --model "$DATA/tiny_cnn.onnx" -o "$WORK/lib" --name tiny >"$WORK/export.out" 2>&1; then
  ok "export --model: $(head -n 1 "$WORK/export.out")"
else
  fail "export --model: $(cat "$WORK/export.out")"
fi
cat >"$WORK/user.c" <<'C'
/* reads the input as raw float32, writes the output as raw float32 */
#include <stdio.h>
#include <stdlib.h>
#include "tiny.h"
int main(int argc, char **argv) {
    tiny_ctx *ctx = tiny_create(argv[1]);
    if (!ctx) { fprintf(stderr, "%s\n", tiny_error()); return 1; }
    float *in = malloc(sizeof(float) * tiny_INPUT_COUNTS[0]), *out = malloc(sizeof(float) * tiny_OUTPUT_COUNTS[0]);
    FILE *f = fopen(argv[2], "rb");
    if (!f || fread(in, sizeof(float), tiny_INPUT_COUNTS[0], f) != (size_t)tiny_INPUT_COUNTS[0]) return 1;
    fclose(f);
    const void *ins[1] = {in};
    void *outs[1] = {out};
    if (tiny_run(ctx, ins, outs) != 0) { fprintf(stderr, "%s\n", tiny_error()); return 1; }
    f = fopen(argv[3], "wb");
    fwrite(out, sizeof(float), tiny_OUTPUT_COUNTS[0], f);
    fclose(f);
    tiny_destroy(ctx);
    free(in), free(out);
    return 0;
}
C
cat >"$WORK/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(user C)
add_subdirectory($WORK/lib lib)
add_executable(user user.c)
target_link_libraries(user tiny)
CM
if cmake -S "$WORK" -B "$WORK/build" >"$WORK/cmake.log" 2>&1 && cmake --build "$WORK/build" -j2 >>"$WORK/cmake.log" 2>&1; then
  ok "the exported library and a user's program build with cmake alone"
else
  fail "cmake build of the export: $(tail -n 5 "$WORK/cmake.log")"
fi
python3 - "$DATA/tiny_cnn.x.npy" "$WORK/x.raw" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<H", b[8:10])[0]
open(sys.argv[2], "wb").write(b[10 + n:])
PY
if "$WORK/build/user" "$WORK/lib/tiny.weights" "$WORK/x.raw" "$WORK/y.raw" 2>"$WORK/user.err"; then
  python3 - "$WORK/y.raw" "$WORK/y.npy" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, %d), }" % (len(d) // 4)
h += " " * (63 - (10 + len(h)) % 64) + "\n"
open(sys.argv[2], "wb").write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + d)
PY
  if cmp=$(npy_close "$WORK/y.npy" "$WORK/tiny_cnn/output.npy" 1e-6 2>&1); then ok "the user's program reproduces run's output: $cmp"
  else fail "the user's program against run: $cmp"; fi
else
  fail "the user's program: $(cat "$WORK/user.err")"
fi

# ---- bad input: one line, exit 1 (a usage error: 2), nothing written ----
head -c 300 "$DATA/tiny_cnn.onnx" >"$WORK/cut.onnx"
expect_fail 1 "cut.onnx" -- "$TT" run --model "$WORK/cut.onnx"
expect_fail 1 "no such|cannot open|No such" -- "$TT" run --model "$WORK/absent.onnx"
expect_fail 1 "no input of that name" -- "$TT" run --model "$DATA/tiny_cnn.onnx" --input nope="$DATA/tiny_cnn.x.npy"
expect_fail 1 "input 'x'.*takes" -- "$TT" run --model "$DATA/tiny_cnn.onnx" --input x="$DATA/tiny_transformer.x.npy"
expect_fail 2 "--model needs" -- "$TT" run --model ""
expect_fail 2 "-o DIR" -- "$TT" export --model "$DATA/tiny_cnn.onnx"
expect_fail 1 "not an ONNX model|cut.onnx" -- "$TT" best --model "$WORK/cut.onnx" "$WORK/tc.log"
expect_fail 1 "absent.onnx" -- "$TT" best --model "$WORK/absent.onnx" "$WORK/tc.log"
expect_fail 1 "no tunable task" -- "$TT" best --model "$DATA/tiny_cnn.onnx" --ops batch_matmul "$WORK/tc.log"
expect_fail 1 "absent.log" -- "$TT" best --model "$DATA/tiny_cnn.onnx" "$WORK/absent.log"
expect_fail 2 "--model reads a log of tunetop's" -- "$TT" best --model "$DATA/tiny_cnn.onnx" --format autotvm "$WORK/tc.log"
expect_fail 2 "go with --model" -- "$TT" best --input-shape x=1x3x32x32 "$WORK/tc.log"
expect_fail 2 "--model needs" -- "$TT" best --model= "$WORK/tc.log"
# view --model: the model and the log are checked before the terminal; without a terminal it refuses as view does
expect_fail 1 "not an ONNX model|cut.onnx" -- "$TT" view --model "$WORK/cut.onnx" "$WORK/tc.log"
expect_fail 2 "--model reads a log of tunetop's" -- "$TT" view --model "$DATA/tiny_cnn.onnx" --format autotvm "$WORK/tc.log"
expect_fail 2 "go with --model" -- "$TT" view --ops dense "$WORK/tc.log"
expect_fail 1 "needs a terminal.*best --model" -- "$TT" view --model "$DATA/tiny_cnn.onnx" "$WORK/tc.log" </dev/null
mkfifo "$WORK/fifo.onnx"
expect_fail 1 "regular file|not a file|FIFO" -- "$TT" run --model "$WORK/fifo.onnx"
[ ! -e "$WORK/never" ] && ok "nothing written for refused runs"
finish
