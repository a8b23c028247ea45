# tests/integration/lib.sh: helpers for the shell integration tests.
# Usage: source it; TT=path/to/tunetop is $1 of the test.
#
# One way out: the EXIT trap decides the script's status, wherever and however
# it ends. Any FAIL line makes it fail (exit 1); a script that stops on its own
# with a non-zero status fails with that status; a script that ran no check
# fails; `skip REASON` is the only way to exit 77 (CTest's SKIP_RETURN_CODE),
# and only before any FAIL. `finish` ends the script through the same trap.
set -u
TT=${1:?usage: $0 path/to/tunetop}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tt-test.XXXXXX")
passed=0
failed=0
tt_skipping=0

tt_exit() {
  local rc=$?
  trap - EXIT
  rm -rf "$WORK"
  if [ "$failed" -gt 0 ]; then
    echo "$passed passed, $failed failed"
    exit 1
  fi
  if [ "$rc" -eq 77 ] && [ "$tt_skipping" -eq 1 ]; then exit 77; fi
  if [ "$rc" -ne 0 ]; then
    echo "FAIL the script stopped with exit $rc after $passed passed checks"
    [ "$rc" -eq 77 ] && exit 1 # 77 without skip is not a skip
    exit "$rc"
  fi
  if [ "$passed" -eq 0 ]; then
    echo "FAIL no check ran"
    exit 1
  fi
  echo "$passed passed, 0 failed"
  exit 0
}
trap tt_exit EXIT

ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }

# required NAME: NAME (opencl, xgboost, mpi, nvrtc, ...) is listed in
# TUNETOP_REQUIRE (comma-separated), i.e. this machine must have it
required() {
  case ",${TUNETOP_REQUIRE:-}," in
    *",$1,"*) return 0 ;;
    *) return 1 ;;
  esac
}

# skip DEPENDENCY REASON: this test cannot run here. Exits 77 (skipped) and
# says why, unless TUNETOP_REQUIRE names DEPENDENCY: then it is a failure.
skip() {
  if required "$1"; then
    fail "TUNETOP_REQUIRE names $1, but: $2"
    exit 1
  fi
  echo "SKIPPED: $2 (needs $1)"
  tt_skipping=1
  exit 77
}

# unchecked DEPENDENCY REASON: one part of the test cannot run here. Not an ok:
# a note, or a failure if TUNETOP_REQUIRE names DEPENDENCY.
unchecked() {
  if required "$1"; then
    fail "TUNETOP_REQUIRE names $1, but: $2"
  else
    echo "not checked: $2 (needs $1)"
  fi
}

# need_opencl: skip (77, or a failure under TUNETOP_REQUIRE=opencl) unless
# `tunetop devices` lists a usable OpenCL device. Only its own "unavailable"
# line is a skip: a tunetop that fails or says nothing about opencl fails.
need_opencl() {
  local devs line
  devs=$("$TT" devices --quick 2>&1)
  line=$(printf '%s\n' "$devs" | grep -m1 -E '^opencl ')
  case $line in
    *" unavailable: "*) skip opencl "no OpenCL device: ${line#* unavailable: }" ;;
    opencl*) echo "opencl device: $(printf '%s' "${line#opencl}" | sed 's/^ *//')" ;;
    *)
      fail "tunetop devices names no opencl target: $(printf '%s' "$devs" | tail -n 3)"
      exit 1
      ;;
  esac
}

# expect_fail CODE PATTERN -- cmd...: the command exits with CODE and its stderr matches PATTERN
expect_fail() {
  local code=$1 pattern=$2
  shift 3
  local out rc
  out=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -eq "$code" ] && printf '%s' "$out" | grep -qE -- "$pattern"; then
    ok "$* -> exit $rc: $(printf '%s' "$out" | head -n 1)"
  else
    fail "$* -> exit $rc (want $code), stderr: $out (want /$pattern/)"
  fi
  # one clear message: a single line on stderr
  local lines
  lines=$(printf '%s\n' "$out" | grep -c .)
  if [ "$lines" -gt 2 ]; then fail "$*: $lines lines of error output"; fi
}

# finish: the end of the script; the EXIT trap prints the summary and decides the status
finish() { exit 0; }
