#!/bin/bash
# TVM's logs through the real binary: best and dump on each format (the
# committed fixtures in tests/data/tvm), malformed lines counted and named,
# an unknown format refused in one line, and `import`: mapped and unmapped
# counts, TVM's index agreement, appending only what the log lacks, the
# source never written, imported records labelled, and measured first by a
# resumed session.
. "$(dirname "$0")/lib.sh"
DATA=$(cd "$(dirname "$0")/../data/tvm" && pwd)
A=$DATA/autotvm_cuda.log

check() { # DESCRIPTION PATTERN TEXT
  if printf '%s\n' "$3" | grep -qE -- "$2"; then ok "$1"; else fail "$1: no /$2/ in: $3"; fi
}

out=$("$TT" best "$A" 2>/dev/null)
check "best autotvm: counts" 'autotvm, 9 records, 7 workloads \(7 with a result\), 7 task names, 1 failed, 1 malformed line skipped' "$out"
check "best autotvm: best of the conv2d workload" 'latency   0.12000 ms' "$out"
err=$("$TT" best --verbose "$A" 2>&1 >/dev/null)
check "best --verbose names the malformed line" 'skipped line 9: not JSON' "$err"
[ "$(printf '%s\n' "$err" | grep -c .)" -eq 2 ] && ok "one line per malformed line, one summary" || fail "--verbose output: $err"
out=$("$TT" best "$DATA/autoscheduler.json")
check "best autoscheduler" 'autoscheduler, 4 records, 2 workloads' "$out"
out=$("$TT" best "$DATA/ms_work")
check "best metaschedule" 'metaschedule, 4 records, 2 workloads .*1 failed' "$out"
check "best metaschedule latency" 'latency   0.30000 ms' "$out"
# a work directory written by TVM 0.27.0.post1 (bench/tvm_metaschedule.sh, 20 trials of a 128^3 matmul on
# llvm); TVM's own summary table said: Latency (us) 244.2177, Trials 20
out=$("$TT" best "$DATA/ms_tvm027")
check "best on TVM 0.27's work directory" 'metaschedule, 20 records, 1 workload \(1 with a result\), 1 task name, 0 failed' "$out"
check "best latency as TVM reported it" 'latency   0.24422 ms' "$out"
n=$("$TT" dump "$DATA/autoscheduler.json" | grep -c '"format":"autoscheduler"')
[ "$n" -eq 4 ] && ok "dump autoscheduler: 4 lines" || fail "dump autoscheduler: $n lines"
out=$("$TT" best --format autoscheduler "$A" 2>&1)
check "a forced wrong format skips every line" '0 records.*10 malformed lines skipped' "$out"
printf 'plain text\n' >"$WORK/plain.txt"
expect_fail 1 'is not a tunetop log, nor an AutoTVM' -- "$TT" best "$WORK/plain.txt"
expect_fail 2 'format wants' -- "$TT" dump --format json "$A"

sum=$(sha256sum "$A")
out=$("$TT" import "$A" --log "$WORK/seed.log")
check "import: mapped" 'mapped    4 \(conv2d 3, depthwise_conv2d 1, dense 0, batch_matmul 0\)' "$out"
check "import: appended" 'appended  4 new records \(0 already' "$out"
check "import: index agreement" 'recomputed for 4 of the mapped records: 3 agree with the stored one, 1 do not' "$out"
check "import: unknown template counted" 'unmapped +1 unknown template' "$out"
check "import: knob missing counted" 'unmapped +1 knob missing' "$out"
check "import: failed measurement counted" 'unmapped +1 failed measurement in TVM' "$out"
out=$("$TT" import "$A" --log "$WORK/seed.log")
check "import again appends nothing" 'appended  0 new records \(4 already in' "$out"
[ "$(sha256sum "$A")" = "$sum" ] && ok "the source log is unchanged" || fail "the source log changed"
out=$("$TT" best "$WORK/seed.log")
check "best labels imported records" 'imported  2 records, not measured here; best there 0.12000 ms \(autotvm autotvm_cuda.log:2' "$out"
check "best does not call them measured" 'none measured here yet \(imported records only\)' "$out"
out=$("$TT" dump "$WORK/seed.log" | head -n 1)
check "dump shows src and src_cost" '"costs":\[\],.*"src":"autotvm autotvm_cuda.log:1","src_cost":0.0009' "$out"
expect_fail 1 'import reads AutoTVM records only' -- "$TT" import "$DATA/autoscheduler.json" --log "$WORK/x.log"
expect_fail 1 'is a cuda log, not cpu' -- "$TT" import "$A" --target cpu --log "$WORK/seed.log"

# a resumed session measures the imported configs first, best first
if "$TT" tune --target cuda --compile-only --arch sm_80 \
     --task conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=1,pad=1 --trials 2 --round-size 2 \
     --log "$WORK/seed.log" --headless >"$WORK/tune.out" 2>&1; then
  check "resume says imported configs are queued" '2 imported configs \(measured elsewhere\) queued to measure first' "$(cat "$WORK/tune.out")"
  idx=$("$TT" dump "$WORK/seed.log" | grep -v '"src"' | grep 'co=64,kh=3' | head -n 2 | sed 's/.*"index":\([0-9]*\).*/\1/' | tr '\n' ' ')
  [ "$idx" = "639355771 0 " ] && ok "first measured: the imported best, then the other" || fail "measured first: $idx"
else
  if grep -qE 'cuda: not built in|not built in \(CUDA toolkit' "$WORK/tune.out"; then
    unchecked nvrtc "a resumed session measures imported configs first: CUDA not built in"
  else
    fail "tune: $(cat "$WORK/tune.out")"
  fi
fi
finish
