#!/usr/bin/env bash
# `tunetop export` and `tunetop distill` through the real binary: a small tuned
# log is exported, built with cmake in a clean directory (no tunetop header or
# library), and a small C program (tests/data/export_check.c, its own naive
# reference) linked against the static library checks every kernel. Then the
# bad inputs of export (one line, non-zero exit, nothing written) and distill
# of the same log (a normal log: best agrees, tune resumes it).
. "$(dirname "$0")/lib.sh"
DATA="$(cd "$(dirname "$0")/../data" && pwd)"

LOG="$WORK/t.log"
"$TT" tune --headless --tuner random --trials 24 --round-size 4 --log "$LOG" \
  --task conv2d:n=1,ci=8,h=10,w=10,co=16,kh=3,kw=3,pad=1,bias=1,relu=1 \
  --task conv2d:n=1,ci=16,h=10,w=10,co=16,kh=3,kw=3,pad=1,residual=1,relu=1 \
  --task depthwise_conv2d:n=1,ci=8,h=9,w=9,kh=3,kw=3,stride=2,pad=1,bias=1 \
  --task dense:m=3,n=20,k=40,bias=1 >"$WORK/tune.out" 2>&1 || { fail "tune: $(tail -3 "$WORK/tune.out")"; finish; exit 1; }

# ---- export, build with cmake in a clean directory, check against an independent reference
OUT="$WORK/exp"
if "$TT" export "$LOG" -o "$OUT" >"$WORK/export.out" 2>&1; then ok "export: $(head -1 "$WORK/export.out")"; else fail "export: $(cat "$WORK/export.out")"; fi
n=$(ls "$OUT"/*.c 2>/dev/null | wc -l)
[ "$n" -eq 4 ] && ok "4 kernels written" || fail "$n kernel sources written (want 4)"
C1=$(ls "$OUT"/conv2d_*.c | head -1)
C1=${C1%.c}
grep -q "measured" "$C1.c" && grep -q "GFLOPS" "$C1.h" && grep -q "$LOG" "$C1.h" \
  && grep -q "config index\|(index [0-9]*)" "$C1.h" && ok "comment block" || fail "comment block incomplete"
# the files are named by the task IDs `best` (and tasks, the UI, run --profile) show: op_ID
want=$("$TT" best --json "$LOG" | python3 -c 'import json, sys
for line in sys.stdin:
    o = json.loads(line)
    if o["used_by_run"]: print(o["task"].split(":")[0] + "_" + str(o["id"]))' | sort | tr '\n' ' ')
got=$(cd "$OUT" && ls *.c | sed 's/\.c$//' | sort | tr '\n' ' ')
[ -n "$got" ] && [ "$want" = "$got" ] && ok "file names carry the task IDs of best: $got" \
  || fail "file names '$got', the IDs best uses '$want'"
if grep -l "tunetop/\|kernels/\|base/" "$OUT"/*.c "$OUT"/*.h | grep -q .; then fail "exported files include tunetop paths"; else ok "no tunetop include"; fi
ls -a "$WORK" | grep -q "tmp-" && fail "temporary directory left beside the output" || ok "no temporary left"

if command -v cmake >/dev/null; then
  mkdir "$WORK/clean" && cp -r "$OUT" "$WORK/clean/src"
  if (cd "$WORK/clean" && cmake -S src -B build >cmake.log 2>&1 && cmake --build build >>cmake.log 2>&1); then
    ok "cmake builds the exported library"
  else
    fail "cmake: $(tail -5 "$WORK/clean/cmake.log")"
  fi
  [ -f "$WORK/clean/build/libtunetop_kernels.a" ] && [ -f "$WORK/clean/build/libtunetop_kernels.so" ] \
    && ok "static and shared library" || fail "libraries missing: $(ls "$WORK/clean/build")"
  mkdir -p "$WORK/gen"
  for h in "$OUT"/*.h; do
    b=$(basename "$h" .h)
    [ "$b" = tunetop_kernels ] || echo "K($b)"
  done >"$WORK/gen/kernel_list.h"
  if cc -std=gnu11 -O2 -I "$WORK/clean/src" -I "$WORK/gen" -o "$WORK/check" "$DATA/export_check.c" \
       "$WORK/clean/build/libtunetop_kernels.a" -fopenmp -lm 2>"$WORK/cc.log"; then
    if OMP_NUM_THREADS=2 "$WORK/check" >"$WORK/check.out" 2>&1; then
      ok "linked program matches the reference: $(tail -1 "$WORK/check.out")"
    else
      fail "linked program: $(cat "$WORK/check.out")"
    fi
  else
    fail "cc: $(head -5 "$WORK/cc.log")"
  fi
else
  fail "no cmake: the exported library cannot be built (scripts/install-deps.sh installs it)"
fi

# ---- a subset, and a task whose every trial failed gets the default config
"$TT" export "$LOG" -o "$WORK/one" --task dense:m=3,n=20,k=40,bias=1 >/dev/null 2>&1 \
  && [ "$(ls "$WORK/one"/*.c | wc -l)" -eq 1 ] && ok "--task selects one kernel" || fail "--task export"

# ---- bad input: one line, non-zero exit, nothing written
expect_fail 1 "no records for 1 of the 1 requested task.*dense:m=7" -- "$TT" export "$LOG" -o "$WORK/b1" --task dense:m=7,n=8,k=8
[ -e "$WORK/b1" ] && fail "output written for a task without records" || ok "nothing written for a task without records"
expect_fail 1 "no records for .* requested tasks" -- "$TT" export "$LOG" -o "$WORK/b2" --network resnet-18
expect_fail 2 "network" -- "$TT" export "$LOG" -o "$WORK/b3" --network resnet-7
expect_fail 2 "unknown option" -- "$TT" export "$LOG" -o "$WORK/b4" --frob
expect_fail 2 "-o DIR" -- "$TT" export "$LOG"
expect_fail 1 "log of target cpu, not opencl" -- "$TT" export "$LOG" -o "$WORK/b5" --target opencl
expect_fail 1 "not empty.*--force" -- "$TT" export "$LOG" -o "$OUT"
sum=$(cat "$OUT"/*.c | md5sum)
"$TT" export "$LOG" -o "$OUT" --force >/dev/null 2>&1 && ok "--force replaces a non-empty directory" || fail "--force"
expect_fail 1 "missing.log" -- "$TT" export "$WORK/missing.log" -o "$WORK/b6"
expect_fail 1 "cannot create|No such file" -- "$TT" export "$LOG" -o "$WORK/no/such/dir"
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$WORK/ro" && chmod 555 "$WORK/ro"
  expect_fail 1 "Permission denied|cannot" -- "$TT" export "$LOG" -o "$WORK/ro/out"
fi
# a full disk: the file size limit makes write(2) fail part-way, as a full disk does
( trap '' XFSZ; ulimit -f 8; "$TT" export "$LOG" -o "$WORK/full" >/dev/null 2>"$WORK/full.err" ); rc=$?
if [ "$rc" -eq 1 ] && grep -q "cannot write" "$WORK/full.err" && [ ! -e "$WORK/full" ] && ! ls "$WORK" | grep -q "full.tmp"; then
  ok "write failure part-way: exit 1, $(head -1 "$WORK/full.err"), nothing left"
else
  fail "write failure: exit $rc, $(cat "$WORK/full.err"), left: $(ls "$WORK" | grep full)"
fi
# a log whose trials all failed: the default config with a warning; --strict refuses.
# Every trial fails for sure: the C compiler on PATH refuses every kernel.
FAILLOG="$WORK/failed.log"
mkdir -p "$WORK/nocc"
printf '#!/bin/sh\necho "cc: this compiler refuses every kernel" >&2\nexit 1\n' >"$WORK/nocc/cc"
chmod +x "$WORK/nocc/cc"
PATH="$WORK/nocc:$PATH" "$TT" tune --headless --tuner random --trials 3 --round-size 3 --no-roof --log "$FAILLOG" \
  --task dense:m=2,n=8,k=8 >"$WORK/failed.out" 2>&1
"$TT" best "$FAILLOG" 2>&1 | grep -q "best      none" && ok "a log whose every trial failed" ||
  fail "every trial failing: $(tail -n 3 "$WORK/failed.out"; "$TT" best "$FAILLOG" 2>&1 | tail -n 3)"
"$TT" export "$FAILLOG" -o "$WORK/def" >/dev/null 2>"$WORK/def.err" && grep -q "default config" "$WORK/def.err" \
  && grep -q "default config" "$WORK/def/dense_0.h" && ok "default config with a warning" || fail "default config: $(cat "$WORK/def.err")"
expect_fail 1 "no successful record.*--strict" -- "$TT" export "$FAILLOG" -o "$WORK/strict" --strict

# ---- best: kernel-only and with-transforms figures, and which is which
"$TT" best "$LOG" >"$WORK/best.out"
if grep -q "latency and speed: the kernel alone" "$WORK/best.out" && grep -qE "^  \+layout   [0-9.]+ ms, [0-9.]+ GFLOPS  with the layout transforms \(pack_s" "$WORK/best.out"; then
  ok "best shows both figures: $(grep -m1 "^  +layout" "$WORK/best.out")"
else
  fail "best lacks the with-transforms figure: $(cat "$WORK/best.out")"
fi
n_layout=$(grep -c "^  +layout" "$WORK/best.out")
[ "$n_layout" -eq 5 ] && ok "+layout for the 5 blocked tasks only" || fail "$n_layout +layout lines (want 5: conv2d x2, their Winograd twins, depthwise)"

# ---- distill: one record per task, best agrees, tune resumes it
D="$WORK/d.log"
if "$TT" distill "$LOG" -o "$D" >"$WORK/distill.out" 2>&1; then ok "distill: $(cat "$WORK/distill.out")"; else fail "distill: $(cat "$WORK/distill.out")"; fi
recs=$("$TT" dump "$D" | wc -l)
# a task is a workload under one template: the two 3x3 stride-1 conv2d are tuned direct and Winograd
tasks=$("$TT" dump "$LOG" | grep '"err":0,' | sed 's/^{"task":"\([^"]*\)","tmpl":"\([^"]*\)".*/\1 \2/' | sort -u | wc -l)
[ "$recs" -eq "$tasks" ] && [ "$tasks" -eq 6 ] && ok "one record per task" || fail "$recs records in the distilled log (want one for each of $tasks tasks)"
strip() { grep -E "^task|template|best |latency|speed"; }
if diff <("$TT" best "$LOG" | strip) <("$TT" best "$D" | strip) >"$WORK/best.diff"; then
  ok "best agrees on the log and its distillate"
else
  fail "best differs: $(cat "$WORK/best.diff")"
fi
"$TT" distill "$LOG" -o "$WORK/d3.log" --keep 3 >/dev/null 2>&1
recs=$("$TT" dump "$WORK/d3.log" | wc -l)
# min(3, successful records) per task (a trial may fail on a loaded machine)
want=$("$TT" dump "$LOG" | grep '"err":0,' | grep -v '"costs":\[\]' | sed 's/^{"task":"\([^"]*\)","tmpl":"\([^"]*\)".*/\1 \2/' \
  | sort | uniq -c | awk '{ s += ($1 < 3 ? $1 : 3) } END { print s + 0 }')
[ "$recs" -eq "$want" ] && [ "$want" -ge 6 ] && ok "--keep 3 keeps 3 per task ($recs records)" \
  || fail "--keep 3: $recs records (want $want)"
expect_fail 1 "exists.*--force" -- "$TT" distill "$LOG" -o "$D"
( trap '' XFSZ; ulimit -f 1; "$TT" distill "$LOG" -o "$WORK/dfull.log" --keep 100 >/dev/null 2>"$WORK/dfull.err" ); rc=$?
if [ "$rc" -eq 1 ] && [ -z "$(ls "$WORK" | grep dfull.log)" ]; then ok "distill write failure: exit 1, $(head -1 "$WORK/dfull.err"), nothing left"
else fail "distill write failure: exit $rc, $(cat "$WORK/dfull.err"), left: $(ls "$WORK" | grep dfull)"; fi
expect_fail 2 "unknown option" -- "$TT" distill "$LOG" -o "$WORK/x.log" --frob
expect_fail 2 "keep" -- "$TT" distill "$LOG" -o "$WORK/x.log" --keep 0
if "$TT" tune --headless --tuner random --trials 8 --round-size 4 --log "$D" --task dense:m=3,n=20,k=40,bias=1 \
     >"$WORK/resume.out" 2>&1 && [ "$("$TT" dump "$D" | wc -l)" -gt 4 ]; then
  ok "tune resumes the distilled log"
else
  fail "resume: $(tail -3 "$WORK/resume.out")"
fi

finish
