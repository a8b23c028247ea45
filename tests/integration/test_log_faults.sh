#!/usr/bin/env bash
# Nothing lost and nothing silently wrong, through the real binary: a full
# disk (a 16 KiB tmpfs, when this runs as root), a file-size limit and a log
# deleted mid-session each stop the session with exit status 3 and a last
# line that says what the log holds; readers refuse a FIFO at once; SIGTERM
# exits 143; the option messages say what is wrong.
. "$(dirname "$0")/lib.sh"

TASK=(--headless --tuner random --seed 5 --round-size 8 --task dense:m=4,n=32,k=32)

# last_line FILE: the last non-empty line
last_line() { grep . "$1" | tail -n 1; }

# records LOG: how many records `dump` reads (its exit status must be 0)
records() { "$TT" dump "$1" 2>/dev/null | wc -l; }

# ---- a file-size limit (the log stops growing at 4 KiB) ------------------
LOG="$WORK/fsize.log"
( ulimit -f 4; exec "$TT" tune "${TASK[@]}" --trials 400 --log "$LOG" ) >"$WORK/fsize.out" 2>&1
rc=$?
n=$(records "$LOG")
last=$(last_line "$WORK/fsize.out")
# the limit stops either the log (exit 3) or, first, the kernel files of the temp folder: a fault of the
# machine, not of the candidate, which stops the session with exit 1 and records nothing for it
if [ $rc -eq 3 ] && printf '%s' "$last" | grep -qE "holds $n records; 1 measured result could not be written and was lost"; then
  ok "ulimit -f: exit 3, $n records kept: $last"
elif [ $rc -eq 1 ] && printf '%s' "$last" | grep -q "a fault of this machine, not of the candidate"; then
  ok "ulimit -f: exit 1 (the temp folder's limit), $n records kept: $last"
else
  fail "ulimit -f: exit $rc, $n records, last line: $last"
fi
grep -q "File too large" "$WORK/fsize.out" && ok "ulimit -f: says File too large" || fail "ulimit -f: no reason given"
"$TT" dump "$LOG" >/dev/null 2>"$WORK/fsize.err" && [ ! -s "$WORK/fsize.err" ] && ok "ulimit -f: the log reads cleanly" ||
  fail "ulimit -f: log does not read cleanly: $(cat "$WORK/fsize.err")"
# the best is one of the records in the log
"$TT" best "$LOG" >"$WORK/fsize.best" 2>&1 && grep -q "$n records" "$WORK/fsize.best" && ok "ulimit -f: best reads $n records" ||
  fail "ulimit -f: best: $(head -n 2 "$WORK/fsize.best")"

# ---- a full disk ----------------------------------------------------------
if [ "$(id -u)" -eq 0 ] && mkdir -p "$WORK/full" && mount -t tmpfs -o size=16k tmpfs "$WORK/full" 2>/dev/null; then
  head -c 12288 /dev/zero >"$WORK/full/filler" 2>/dev/null # leave about 4 KiB: a short session fills it
  "$TT" tune "${TASK[@]}" --trials 400 --log "$WORK/full/r.log" >"$WORK/full.out" 2>&1
  rc=$?
  n=$(records "$WORK/full/r.log")
  last=$(last_line "$WORK/full.out")
  if [ $rc -eq 3 ] && printf '%s' "$last" | grep -qE "holds $n records;.* lost"; then
    ok "full disk: exit 3, $n records kept: $last"
  else
    fail "full disk: exit $rc, $n records, last line: $last"
  fi
  grep -q "No space left on device" "$WORK/full.out" && ok "full disk: says No space left" || fail "full disk: no reason given"
  umount "$WORK/full"
else
  unchecked root "full disk (ENOSPC): needs root and a tmpfs mount"
fi

# ---- the log deleted while the session writes it ---------------------------
LOG="$WORK/del.log"
"$TT" tune "${TASK[@]}" --trials 2000 --log "$LOG" >"$WORK/del.out" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  [ "$(records "$LOG")" -ge 8 ] && break
  kill -0 "$pid" 2>/dev/null || break # the session ended already: no record will come
  sleep 0.1
done
rm -f "$LOG"
wait "$pid"
rc=$?
last=$(last_line "$WORK/del.out")
if [ $rc -eq 3 ] && printf '%s' "$last" | grep -qE "records were copied to .*del.log.recovered"; then
  ok "deleted log: exit 3: $last"
else
  fail "deleted log: exit $rc, last line: $last"
fi
grep -q "was deleted while this session was writing it" "$WORK/del.out" && ok "deleted log: says so" || fail "deleted log: no reason"
n=$(records "$LOG.recovered")
[ "$n" -ge 8 ] && printf '%s' "$last" | grep -q "log's $n records" && ok "deleted log: the recovery copy reads $n records" ||
  fail "deleted log: recovery copy reads $n records; $last"
mv "$LOG.recovered" "$LOG"
"$TT" tune "${TASK[@]}" --trials $((n + 8)) --log "$LOG" >"$WORK/del2.out" 2>&1 && grep -q "resumed" "$WORK/del2.out" &&
  ok "deleted log: the copy resumes: $(grep -m1 resumed "$WORK/del2.out")" || fail "deleted log: copy does not resume"

# ---- readers refuse a FIFO at once -----------------------------------------
mkfifo "$WORK/fifo"
for cmd in best dump view; do
  expect_fail 1 "is a FIFO, not a log file" -- timeout 10 "$TT" $cmd "$WORK/fifo"
done
expect_fail 1 "not a regular file" -- timeout 10 "$TT" tune "${TASK[@]}" --trials 4 --log "$WORK/fifo"

# ---- SIGTERM is 143, Ctrl-C 130 ---------------------------------------------
LOG="$WORK/term.log"
"$TT" tune "${TASK[@]}" --trials 2000 --log "$LOG" >"$WORK/term.out" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  [ "$(records "$LOG")" -ge 4 ] && break
  kill -0 "$pid" 2>/dev/null || break # the session ended already: no record will come
  sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
rc=$?
[ $rc -eq 143 ] && ok "SIGTERM: exit 143: $(grep -m1 stopped "$WORK/term.out")" || fail "SIGTERM: exit $rc"

# ---- damage inside a number --------------------------------------------------
# flip one bit of the first record's first cost: best, dump and tune (resume) call it damage
LOG="$WORK/flip.log"
"$TT" tune "${TASK[@]}" --trials 8 --log "$LOG" >/dev/null 2>&1
python3 - "$LOG" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
i = b.index(b"\xa5costs") + 6 + 1 + 1  # the key, the array header, 0xcb
b[i] ^= 0x10                          # an exponent bit: still a valid, tiny positive number
open(p, "wb").write(bytes(b))
EOF
sum=$(md5sum <"$LOG")
expect_fail 1 "damaged at byte offset [0-9]+: checksum mismatch" -- "$TT" best "$LOG"
expect_fail 1 "damaged at byte offset [0-9]+: checksum mismatch" -- "$TT" dump "$LOG"
expect_fail 1 "damaged at byte offset [0-9]+: checksum mismatch" -- "$TT" tune "${TASK[@]}" --trials 16 --log "$LOG"
[ "$(md5sum <"$LOG")" = "$sum" ] && ok "damaged log left untouched" || fail "damaged log was modified"

# ---- messages that say what is wrong -------------------------------------------
expect_fail 2 "--threads needs a value" -- "$TT" tune "${TASK[@]}" --threads
expect_fail 2 "--seed: -1 is negative" -- "$TT" tune "${TASK[@]}" --seed -1
expect_fail 2 "--network needs a value" -- "$TT" tasks --network
"$TT" tune "${TASK[@]}" --trials 2 --log "$WORK/deep2.log" >/dev/null 2>&1
python3 -c "import sys; open(sys.argv[1], 'ab').write(b'\x81\xa4task' + b'\x91' * 40 + b'\x01')" "$WORK/deep2.log"
expect_fail 1 "nested more than 16 levels deep" -- "$TT" best "$WORK/deep2.log"

finish
