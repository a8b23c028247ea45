# tests/integration/lib.sh: helpers for the shell integration tests.
# Usage: source it; TT=path/to/tunetop is $1 of the test.
set -u
TT=${1:?usage: $0 path/to/tunetop}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tt-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }

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

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
