#!/usr/bin/env bash
# mpirun -np 3 on this machine (loopback), cpu target: rank 0 is the session,
# ranks 1 and 2 build and measure.
#  1. a session completes; every record names its host and rank (1 or 2); no
#     (task, config) is measured twice; `best` works and says where.
#  a slow rank (held by TUNETOP_TEST_HOLD) does not stall the others;
#  --local-measure yes: rank 0 measures too; a bad value is one line.
#  ranks with different devices: each task on one kind.
#  devices: opencl on PoCL (device by node-local rank, --devices), cuda
#  without a driver (one line per rank, the session ends).
#  2. kill -9 of rank 2 under `mpirun --enable-recovery`: rank 0 declares it
#     lost, re-queues its candidates and finishes the budget with rank 1.
#  3. kill -9 of rank 2 under a plain mpirun (which then ends the whole job):
#     the log is intact, and the same command resumes and finishes the budget
#     with nothing measured twice.
#  4. the measuring workers of ranks 1 and 2 killed from outside: a fault of
#     those machines, so nothing is recorded as failed and the budget finishes.
# Always registered (tests/CMakeLists.txt): skipped (77) when tunetop was built
# without MPI or there is no mpirun, a failure if TUNETOP_REQUIRE names mpi.
. "$(dirname "$0")/../integration/lib.sh"
MPIRUN=${MPIRUN:-mpirun} # a name on PATH: Open MPI reads an absolute path to mpirun as a --prefix
[ "${TT_MPI_BUILT:-1}" = 1 ] || skip mpi "tunetop was built without MPI"
[ -n "${TT_MPIRUN_DIR:-}" ] && PATH="$TT_MPIRUN_DIR:$PATH"
command -v "$MPIRUN" >/dev/null || skip mpi "no $MPIRUN on PATH"
# Under the sanitizer pass, leak checking is off for the ranks: Open MPI unloads
# its plugins at MPI_Finalize, so LeakSanitizer cannot attribute (or suppress)
# what they keep. Memory errors are still caught; the engine's side of the
# backend is leak-checked by test_engine with a fake backend.
mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$MPIRUN" --oversubscribe --allow-run-as-root
     --bind-to none)
task=(--task dense:m=16,n=32,k=32 --task dense:m=8,n=64,k=32)
common=(tune --headless --tuner random --seed 5 --round-size 8 --builders 1 --no-roof --table-every 1 "${task[@]}")

# no_dupes LOG: every (task, index) once
no_dupes() {
  local d
  d=$("$TT" dump "$1" | grep -o '"task":"[^"]*"\|"index":[0-9]*' | paste - - | sort | uniq -d | wc -l)
  [ "$d" -eq 0 ] && ok "$2: no (task, config) measured twice" || fail "$2: $d (task, config) pairs measured twice"
}
count() { "$TT" dump "$1" 2>/dev/null | wc -l; }
rank_pid() { # rank_pid MPIRUN_PID RANK: the pid of that rank's tunetop
  local p
  for p in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then echo "$p"; return; fi
  done
}
wait_records() { # wait_records LOG N SECONDS PID: up to SECONDS, or until PID (the mpirun) has ended
  for _ in $(seq 1 $(($3 * 10))); do
    [ "$(count "$1")" -ge "$2" ] && return 0
    kill -0 "$4" 2>/dev/null || break
    sleep 0.1
  done
  [ "$(count "$1")" -ge "$2" ]
}

# ---- 1. a whole session
L1="$WORK/one.log"
"${mpi[@]}" -np 3 "$TT" "${common[@]}" --trials 16 --log "$L1" </dev/null >"$WORK/one.out" 2>&1
rc=$?
[ $rc -eq 0 ] && ok "mpirun -np 3: session done" || fail "mpirun -np 3 exit $rc: $(tail -n 5 "$WORK/one.out")"
n=$(count "$L1")
[ "$n" -eq 16 ] && ok "16 records" || fail "$n records (want 16)"
bad=$("$TT" dump "$L1" | grep -vc '"host":"[^"]\+".*"rank":[12],')
[ "$bad" -eq 0 ] && ok "every record names its host and a server rank" || fail "$bad records without host / rank 1-2"
ranks=$("$TT" dump "$L1" | grep -o '"rank":[0-9]*' | sort -u | tr '\n' ' ')
ok "ranks that measured: $ranks"
no_dupes "$L1" "session"
grep -q "\[ Devices \]" "$WORK/one.out" && grep -qE "^\| +2 \| " "$WORK/one.out" && ok "headless devices table" ||
  fail "no devices table in the headless output"
"$TT" best "$L1" >"$WORK/best.out" 2>&1 && grep -q "measured  on .*, rank [12]" "$WORK/best.out" &&
  ok "best: $(grep -m1 'measured  on' "$WORK/best.out")" || fail "best: $(cat "$WORK/best.out")"

# ---- a slow rank does not stall the others: rank 2 holds every job it gets
# (before timing it) until a file exists; meanwhile rank 1 measures round after
# round (rounds of 4). Rounds taken in turn would stop at the first round that
# gave rank 2 a job.
L4="$WORK/slow.log"
GO="$WORK/go"
TUNETOP_TEST_HOLD="2:$GO" "${mpi[@]}" -x TUNETOP_TEST_HOLD -np 3 "$TT" "${common[@]}" --round-size 4 --trials 24 \
  --rank-timeout 120 --log "$L4" </dev/null >"$WORK/slow.out" 2>&1 &
mp=$!
if wait_records "$L4" 16 150 "$mp"; then
  r2=$("$TT" dump "$L4" | grep -c '"rank":2,')
  [ "$r2" -eq 0 ] && ok "rank 2 holds its jobs; meanwhile rank 1 measured $(count "$L4") (rounds of 4)" ||
    fail "rank 2 was not held: $r2 records"
else
  fail "rank 1 stalled behind the held rank 2: $(count "$L4") records after 150 s"
fi
touch "$GO"
wait "$mp"
rc=$?
[ $rc -eq 0 ] && ok "slow-rank session finished" || fail "mpirun exit $rc: $(tail -n 5 "$WORK/slow.out")"
n=$(count "$L4")
first2=$("$TT" dump "$L4" | grep -n '"rank":2,' | head -n 1 | cut -d: -f1)
[ "$n" -eq 24 ] && [ "${first2:-0}" -gt 16 ] && ok "24 records in completion order: rank 2's first is record $first2" ||
  fail "$n records, rank 2's first at ${first2:-none}"
no_dupes "$L4" "slow rank"

# ---- --local-measure: rank 0 measures too (on one node its default is no, as section 1 shows)
L5="$WORK/local.log"
"${mpi[@]}" -np 2 "$TT" "${common[@]}" --trials 12 --local-measure yes --log "$L5" </dev/null >"$WORK/local.out" 2>&1
rc=$?
r0=$("$TT" dump "$L5" | grep -c '"rank":0,')
[ $rc -eq 0 ] && [ "$(count "$L5")" -eq 12 ] && [ "$r0" -ge 1 ] &&
  ok "--local-measure yes: 12 records, $r0 measured by rank 0" || fail "--local-measure yes: exit $rc, $r0 by rank 0"
grep -qE "^\| +0 \| " "$WORK/local.out" && ok "devices table lists rank 0" || fail "no rank 0 in the devices table"
no_dupes "$L5" "local measure"
"${mpi[@]}" -np 2 "$TT" "${common[@]}" --trials 4 --local-measure maybe --log "$WORK/bad.log" </dev/null \
  >"$WORK/bad.out" 2>&1
rc=$?
[ $rc -ne 0 ] && [ "$(grep -c 'local-measure' "$WORK/bad.out")" -eq 1 ] &&
  ok "exit $rc: $(grep 'local-measure' "$WORK/bad.out")" || fail "--local-measure maybe: exit $rc, $(cat "$WORK/bad.out")"

# ---- ranks with different devices (rank 2 named as another model through the test-only
# TUNETOP_TEST_DEVICE): said at start; each task is measured on one kind of device
L7="$WORK/kinds.log"
TUNETOP_TEST_DEVICE="2:Other CPU" "${mpi[@]}" -x TUNETOP_TEST_DEVICE -np 3 "$TT" "${common[@]}" --round-size 4 --trials 16 \
  --log "$L7" </dev/null >"$WORK/kinds.out" 2>&1
rc=$?
mixed=$("$TT" dump "$L7" | grep -o '"task":"[^"]*"\|"dev":"[^"]*"' | paste - - | sort -u | cut -f1 | uniq -d | wc -l)
[ $rc -eq 0 ] && [ "$(count "$L7")" -eq 16 ] && [ "$mixed" -eq 0 ] &&
  ok "different devices: 16 records, each task on one kind ($("$TT" dump "$L7" | grep -o '"dev":"[^"]*"' | sort | uniq -c | tr -s ' ' | tr '\n' ';'))" ||
  fail "different devices: exit $rc, $(count "$L7") records, $mixed tasks measured on two kinds"
grep -q "devices differ" "$WORK/kinds.out" && ok "$(grep -m1 -o 'rank [0-9] on .*devices differ.*' "$WORK/kinds.out")" ||
  fail "no 'devices differ' note"

# ---- devices: the opencl target on PoCL (one device: every rank takes device 0, so rank 0 does not measure)
if "$TT" devices 2>/dev/null | grep -qE '^opencl +unavailable'; then
  unchecked opencl "opencl ranks: no OpenCL device here"
else
  L6="$WORK/ocl.log"
  "${mpi[@]}" -np 3 "$TT" "${common[@]}" --target opencl --task dense:m=16,n=16,k=16 --trials 6 --log "$L6" \
    </dev/null >"$WORK/ocl.out" 2>&1
  rc=$?
  bad=$("$TT" dump "$L6" | grep -vc '"rank":[12],"dev":"[^"]* #0"')
  [ $rc -eq 0 ] && [ "$(count "$L6")" -eq 6 ] && [ "$bad" -eq 0 ] &&
    ok "opencl -np 3: 6 records, each by rank 1 or 2 on its node's device #0" ||
    fail "opencl: exit $rc, $(count "$L6") records, $bad not on a server's device #0: $(tail -n 3 "$WORK/ocl.out")"
  "${mpi[@]}" -np 3 "$TT" "${common[@]}" --target opencl --devices 0,1 --trials 4 --log "$WORK/ocl2.log" \
    </dev/null >"$WORK/ocl2.out" 2>&1
  rc=$?
  line=$(grep -c 'cannot open its device' "$WORK/ocl2.out")
  [ $rc -eq 0 ] && [ "$line" -eq 1 ] && ok "--devices 0,1 (one device here): $(grep 'cannot open' "$WORK/ocl2.out")" ||
    fail "--devices 0,1: exit $rc, $line lines: $(tail -n 3 "$WORK/ocl2.out")"
fi
# the cuda target without a driver: every rank says so in one line naming its host and rank; the session ends
if "$TT" devices 2>/dev/null | grep -qE '^cuda +unavailable'; then
  "${mpi[@]}" -np 3 "$TT" "${common[@]}" --target cuda --trials 4 --log "$WORK/cuda.log" </dev/null \
    >"$WORK/cuda.out" 2>&1
  rc=$?
  lines=$(grep -cE 'rank [012] on [^ ]+ cannot open its device' "$WORK/cuda.out")
  [ $rc -ne 0 ] && [ "$lines" -eq 3 ] && grep -q "no measure server left" "$WORK/cuda.out" &&
    ok "cuda without a driver: exit $rc; $(grep -m1 'rank 1 on' "$WORK/cuda.out")" ||
    fail "cuda: exit $rc, $lines rank lines: $(head -n 5 "$WORK/cuda.out")"
  [ "$(count "$WORK/cuda.log")" -eq 0 ] && ok "cuda: the log is intact, nothing recorded" || fail "cuda: records?"
else
  echo "not checked: cuda ranks without a driver (a driver is present)"
fi
"${mpi[@]}" -np 2 "$TT" "${common[@]}" --devices 0,1 --trials 4 --log "$WORK/bad2.log" </dev/null >"$WORK/bad2.out" 2>&1
rc=$?
[ $rc -ne 0 ] && [ "$(grep -c 'devices' "$WORK/bad2.out")" -eq 1 ] && ok "cpu --devices: exit $rc, $(grep devices "$WORK/bad2.out")" ||
  fail "cpu --devices: exit $rc: $(cat "$WORK/bad2.out")"

# ---- 2. kill -9 of a server; --enable-recovery: the session goes on
L2="$WORK/two.log"
"${mpi[@]}" --enable-recovery -np 3 "$TT" "${common[@]}" --trials 24 --rank-timeout 2 --log "$L2" \
  </dev/null >"$WORK/two.out" 2>&1 &
mp=$!
if wait_records "$L2" 6 40 "$mp"; then
  victim=$(rank_pid "$mp" 2)
  kill -9 "$victim" && ok "killed rank 2 (pid $victim) with $(count "$L2") records on disk"
else
  fail "no records after 40 s: $(tail -n 5 "$WORK/two.out")"
fi
wait "$mp"
rc=$?
[ $rc -eq 0 ] && ok "session with a lost rank finished (mpirun exit 0)" || fail "mpirun exit $rc: $(tail -n 5 "$WORK/two.out")"
grep -q "rank 2 on .* lost" "$WORK/two.out" && ok "$(grep -m1 'rank 2 on .* lost' "$WORK/two.out")" ||
  fail "rank 2 not reported lost"
grep -qE "^\| +2 \| .*\| lost " "$WORK/two.out" && ok "devices table shows rank 2 lost" || fail "devices table: no lost rank 2"
n=$(count "$L2")
[ "$n" -eq 24 ] && ok "the budget was finished by rank 1: 24 records" || fail "$n records (want 24)"
no_dupes "$L2" "lost rank"

# ---- 3. kill -9 under a plain mpirun: the job ends, the same command resumes
L3="$WORK/three.log"
cmd3=("${mpi[@]}" -np 3 "$TT" "${common[@]}" --trials 24 --log "$L3")
"${cmd3[@]}" </dev/null >"$WORK/three.out" 2>&1 &
mp=$!
if wait_records "$L3" 6 40 "$mp"; then
  victim=$(rank_pid "$mp" 2)
  kill -9 "$victim" && ok "killed rank 2 (pid $victim)"
else
  fail "no records after 40 s: $(tail -n 5 "$WORK/three.out")"
fi
wait "$mp"
rc=$?
before=$(count "$L3")
[ $rc -ne 0 ] && ok "plain mpirun ended the job (exit $rc) with $before records" || fail "mpirun exit 0 after a kill"
"$TT" dump "$L3" >/dev/null 2>"$WORK/dump3.err" && ok "log intact after the abort" || fail "dump: $(cat "$WORK/dump3.err")"
no_dupes "$L3" "aborted job"
"${cmd3[@]}" </dev/null >"$WORK/three2.out" 2>&1
rc=$?
# on failure, tunetop's own lines (mpirun's banner after them says only which rank ended the job)
[ $rc -eq 0 ] && ok "the same command resumed and finished" ||
  fail "resume exit $rc: $(grep -E 'tunetop|error|warning|rank|stop' "$WORK/three2.out" | tail -n 15)"
grep -q "resumed" "$WORK/three2.out" && ok "$(grep -m1 -o 'resumed [^;]*' "$WORK/three2.out")" || fail "no resume message"
n=$(count "$L3")
[ "$n" -eq 24 ] && ok "24 records after the resume" || fail "$n records after the resume (want 24)"
no_dupes "$L3" "resumed"

# ---- 4. the measuring workers killed from outside: the machine's fault, not the candidates'
L4="$WORK/four.log"
"${mpi[@]}" -np 3 "$TT" "${common[@]}" --trials 24 --log "$L4" </dev/null >"$WORK/four.out" 2>&1 &
mp=$!
if wait_records "$L4" 6 40 "$mp"; then
  workers=()
  for r in 1 2; do
    p=$(rank_pid "$mp" $r)
    [ -n "$p" ] && workers+=($(pgrep -P "$p" -f tunetop-worker))
  done
  [ ${#workers[@]} -gt 0 ] && kill -9 "${workers[@]}" && ok "killed the workers of ranks 1 and 2 (${workers[*]})" ||
    fail "no worker process under ranks 1 and 2"
else
  fail "no records after 40 s: $(tail -n 5 "$WORK/four.out")"
fi
wait "$mp"
rc=$?
[ $rc -eq 0 ] && ok "session with killed workers finished" || fail "mpirun exit $rc: $(tail -n 5 "$WORK/four.out")"
grep -q "a fault of that machine, not of the candidate" "$WORK/four.out" &&
  ok "$(grep -m1 'a fault of that machine' "$WORK/four.out")" || fail "no machine-fault warning"
n=$(count "$L4")
[ "$n" -eq 24 ] && ok "24 records" || fail "$n records (want 24)"
"$TT" dump "$L4" | grep -q '"err":[1-9]' && fail "an error record after the workers were killed: $("$TT" dump "$L4" | grep -m1 '"err":[1-9]')" ||
  ok "no candidate recorded as failed"
no_dupes "$L4" "killed workers"

finish
