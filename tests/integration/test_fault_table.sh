#!/usr/bin/env bash
# The faults a fault-injection pass found, each through the real binary: a
# log changed in place under its writer, cut at a record boundary or holding
# a duplicated record; a file-size limit in the temp folder; inf and NaN in
# the reference; TVM costs that are not latencies; dishonest exits; readers
# given a FIFO or a device; .te nesting and sizes; SIGHUP; stale temp
# folders; and every write and sync of a session failed in turn. Each must
# end in a clear refusal, a non-zero exit, or a correct result.
. "$(dirname "$0")/lib.sh"

TASK=(--headless --tuner random --seed 5 --batch 8 --task dense:m=4,n=32,k=32)
records() { "$TT" dump "$1" 2>/dev/null | wc -l; }
wait_records() { # LOG N [PID]: until LOG reads at least N records, the session PID has ended, or a deadline
  for _ in $(seq 1 600); do
    [ "$(records "$1")" -ge "$2" ] && return 0
    [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null && return 1
    sleep 0.1
  done
  return 1
}

# ---- the log changed in place (same inode) while a session writes it ------
"$TT" tune "${TASK[@]}" --trials 24 --log "$WORK/other.log" >/dev/null 2>&1
for how in cp trunc0 trunc2000 append; do
  LOG="$WORK/inplace-$how.log"
  "$TT" tune "${TASK[@]}" --trials 100000 --log "$LOG" >"$WORK/inplace.out" 2>&1 &
  pid=$!
  wait_records "$LOG" 8 "$pid"
  case $how in
    cp) cp "$WORK/other.log" "$LOG" ;;
    trunc0) truncate -s 0 "$LOG" ;;
    trunc2000) truncate -s 2000 "$LOG" ;;
    append) cat "$WORK/other.log" >>"$LOG" ;;
  esac
  wait "$pid"
  rc=$?
  n=$(records "$LOG.recovered")
  if [ $rc -eq 3 ] && grep -q "was changed by another program" "$WORK/inplace.out" && [ "$n" -ge 8 ]; then
    ok "log changed in place ($how): exit 3, $n records in LOG.recovered: $(grep -m1 -o 'changed by another program.*' "$WORK/inplace.out")"
  else
    fail "log changed in place ($how): exit $rc, $n records recovered: $(tail -n 3 "$WORK/inplace.out")"
  fi
done

# ---- cut at a record boundary; a duplicated record ------------------------
LOG="$WORK/cut.log"
"$TT" tune "${TASK[@]}" --trials 16 --log "$LOG" >/dev/null 2>&1
"$TT" best "$LOG" >/dev/null 2>"$WORK/best.err"
grep -q "close marker" "$WORK/best.err" && fail "a clean log warned: $(cat "$WORK/best.err")" || ok "a clean stop: no warning"
# the objects end with their seal (0xa3 "crc" 0xce + 4 bytes): cut after the last record, and duplicate one
python3 - "$LOG" "$WORK/cut_end.log" "$WORK/dup.log" <<'EOF'
import sys
data = open(sys.argv[1], 'rb').read()
ends, at = [], 0
while True:
    i = data.find(b'\xa3crc\xce', at)
    if i < 0: break
    ends.append(i + 9); at = i + 9
open(sys.argv[2], 'wb').write(data[:ends[-2]])                     # without the close marker
open(sys.argv[3], 'wb').write(data[:ends[-3]] + data[ends[-4]:ends[-3]] + data[ends[-3]:])  # a record twice
EOF
"$TT" best "$WORK/cut_end.log" >/dev/null 2>"$WORK/cut.err"
rc=$?
[ $rc -eq 0 ] && grep -q "has no close marker (it ended by a crash, or the log was cut): it holds 16 records" "$WORK/cut.err" &&
  ok "cut at a record boundary: best says so: $(cat "$WORK/cut.err")" || fail "cut at a record boundary: exit $rc: $(cat "$WORK/cut.err")"
"$TT" dump "$WORK/cut_end.log" 2>&1 >/dev/null | grep -q "it holds 16 records" && ok "dump says so too" || fail "dump is silent"
expect_fail 1 "duplicated, reordered or missing" -- "$TT" best "$WORK/dup.log"
expect_fail 1 "duplicated, reordered or missing" -- "$TT" tune "${TASK[@]}" --trials 40 --log "$WORK/dup.log"

# ---- a full temp folder (a file-size limit): the machine's fault, not the candidate's
LOG="$WORK/fsize.log"
( ulimit -f 100; exec "$TT" tune --headless --tuner random --batch 4 --trials 8 --task dense:m=512,n=512,k=512 \
  --log "$LOG" ) >"$WORK/fsize.out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "a fault of this machine, not of the candidate" "$WORK/fsize.out" && [ "$(records "$LOG")" -eq 0 ] &&
  ok "temp folder full: exit 1, nothing recorded as measured: $(tail -n 1 "$WORK/fsize.out")" ||
  fail "temp folder full: exit $rc, $(records "$LOG") records: $(tail -n 2 "$WORK/fsize.out")"

# ---- inf and NaN in the reference -----------------------------------------
printf 'input X[64, 64]\nY[i < 64, j < 64] = sqrt(X[i, j])\noutput Y\n' >"$WORK/sqrt.te"
printf 'input X[64, 64]\nY[i < 64, j < 64] = exp(1000 * X[i, j])\noutput Y\n' >"$WORK/exp.te"
for e in sqrt exp; do
  "$TT" tune --headless --expr "$WORK/$e.te" --trials 4 --batch 4 --log "$WORK/$e.log" >"$WORK/$e.out" 2>&1
  rc=$?
  [ $rc -eq 0 ] && "$TT" best "$WORK/$e.log" | grep -q "trials    4 (no errors)" && ok "$e: NaN/inf compared as allclose(equal_nan)" ||
    fail "$e: exit $rc: $("$TT" best "$WORK/$e.log" | grep trials)"
done

# ---- TVM costs that are not latencies --------------------------------------
good=$(head -n 1 "$(dirname "$0")/../data/tvm/autoscheduler.json")
{ printf '%s\n' "${good/\"r\": \[\[0.00021, 0.00022\]/\"r\": [[-1]}"; printf '%s\n' "${good/\"r\": \[\[0.00021, 0.00022\]/\"r\": [[0]}"; } >"$WORK/neg.json"
"$TT" best "$WORK/neg.json" >"$WORK/neg.out" 2>&1
grep -q "best      none" "$WORK/neg.out" && grep -q "left out  2 records whose cost is no latency (2 with a cost <= 0)" "$WORK/neg.out" &&
  ok "TVM cost -1 and 0: never a best, counted by reason" || fail "TVM cost -1 and 0: $(cat "$WORK/neg.out")"

# ---- honest exits ----------------------------------------------------------
LOG="$WORK/budget.log"
"$TT" tune "${TASK[@]}" --trials 20 --log "$LOG" >/dev/null 2>&1
"$TT" tune "${TASK[@]}" --trials 10 --log "$LOG" >"$WORK/budget.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "the budget of 10 trials is already spent" "$WORK/budget.out" && ! grep -q "Next ID: -1" "$WORK/budget.out" &&
  ok "budget already spent: exit 0: $(tail -n 1 "$WORK/budget.out")" || fail "budget spent: exit $rc: $(tail -n 2 "$WORK/budget.out")"
"$TT" tune --headless --tuner random --batch 4 --trials 4 --timeout 0.01 --task dense:m=1024,n=1024,k=1024 \
  --log "$WORK/allfail.log" >"$WORK/allfail.out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "no trial succeeded" "$WORK/allfail.out" && ok "every trial failed: exit 1" ||
  fail "every trial failed: exit $rc: $(tail -n 2 "$WORK/allfail.out")"

# ---- readers given a FIFO or a device --------------------------------------
mkfifo "$WORK/fifo"
expect_fail 1 "is a FIFO, not a log file" -- timeout 20 "$TT" best --format autotvm "$WORK/fifo"
expect_fail 1 "is a FIFO, not a log file" -- timeout 20 "$TT" dump --format autoscheduler "$WORK/fifo"
expect_fail 1 "is a FIFO, not a log file" -- timeout 20 "$TT" view --format autotvm "$WORK/fifo"
expect_fail 1 "is a character device, not a log file" -- timeout 20 "$TT" dump --format autoscheduler /dev/urandom
expect_fail 1 "is a FIFO, not a log file" -- timeout 20 "$TT" import "$WORK/fifo" --log "$WORK/imp.log"
expect_fail 2 "not a regular file" -- timeout 20 "$TT" tasks --expr "$WORK/fifo"

# ---- .te nesting and sizes -------------------------------------------------
python3 -c "print('input X[1]\nY[i < 1] = ' + '(' * 10000 + 'X[i]' + ')' * 10000 + '\noutput Y')" >"$WORK/deep.te"
python3 -c "print('input X[1]\nY[i < 1] = ' + '- ' * 400 + 'X[i]\noutput Y')" >"$WORK/neg.te"
printf 'let N = 2147483648\ninput A[N, N]\nB[i < N, j < N] = A[i, j]\noutput B\n' >"$WORK/big.te"
expect_fail 2 "nests more than 64 levels deep" -- "$TT" tasks --expr "$WORK/deep.te"
expect_fail 2 "nests more than 64 levels deep" -- "$TT" tasks --expr "$WORK/neg.te"
expect_fail 2 "'A' has more than 4294967296 elements" -- "$TT" tasks --expr "$WORK/big.te"

# ---- SIGHUP: the same stop as Ctrl-C, with the resume line -----------------
LOG="$WORK/hup.log"
"$TT" tune "${TASK[@]}" --trials 100000 --log "$LOG" >"$WORK/hup.out" 2>&1 &
pid=$!
wait_records "$LOG" 8 "$pid"
kill -HUP "$pid"
wait "$pid"
rc=$?
[ $rc -eq 129 ] && grep -q "resume with: tunetop tune" "$WORK/hup.out" && ok "SIGHUP: exit 129 and the resume line" ||
  fail "SIGHUP: exit $rc: $(tail -n 2 "$WORK/hup.out")"

# ---- temp folders of a killed session are removed at the next start -------
mkdir -p "$WORK/tmp"
TMPDIR="$WORK/tmp" "$TT" tune "${TASK[@]}" --trials 100000 --log "$WORK/k.log" >/dev/null 2>&1 &
pid=$!
wait_records "$WORK/k.log" 8 "$pid"
kill -9 "$pid"
wait "$pid" 2>/dev/null
left=$(find "$WORK/tmp" -maxdepth 1 -name 'tunetop-*' | wc -l)
TMPDIR="$WORK/tmp" "$TT" tune "${TASK[@]}" --trials 2 --log "$WORK/k2.log" >/dev/null 2>&1
after=$(find "$WORK/tmp" -maxdepth 1 -name 'tunetop-*' | wc -l)
[ "$left" -ge 1 ] && [ "$after" -eq 0 ] && ok "kill -9 left $left temp folders; the next session removed them" ||
  fail "temp folders: $left after kill -9, $after after the next session"

# ---- every write and sync of a session failed in turn ---------------------
runs=0
bad=0
for n in $(seq 1 200); do
  LOG="$WORK/fp.log"
  rm -f "$LOG"
  TUNETOP_LOGIO_FAIL_AT=$n "$TT" tune "${TASK[@]}" --trials 8 --log "$LOG" >"$WORK/fp.out" 2>&1
  rc=$?
  [ $rc -eq 0 ] && break # the fault point is past the session's last write
  runs=$((runs + 1))
  if [ -s "$LOG" ] && ! "$TT" dump "$LOG" >/dev/null 2>"$WORK/fp.err" && ! grep -q "empty file" "$WORK/fp.err"; then
    bad=$((bad + 1))
    echo "  fault point $n: exit $rc, the log does not read: $(cat "$WORK/fp.err")"
  fi
done
[ $runs -ge 15 ] && [ $bad -eq 0 ] && ok "$runs fault points (every write and sync of a session): each exit non-zero, every log readable" ||
  fail "fault points: $runs runs, $bad logs unreadable"

finish
