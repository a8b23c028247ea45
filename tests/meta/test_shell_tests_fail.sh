#!/usr/bin/env bash
# tests/meta/test_shell_tests_fail.sh TESTS_DIR: the suite checks itself. Every
# shell test (integration/*.sh, e2e/*.sh, mpi/*.sh) runs against a tunetop that
# always fails, and must fail: exit non-zero and not 77. A test that passes
# there cannot fail; one that skips there mistakes a broken binary for a
# missing device. Prints a table: test, exit code, verdict.
#   TT_META_CODES="1 139"  the exit codes of the failing tunetop (default: both;
#                          139 is a crash by SIGSEGV)
#   TT_META_ONLY=REGEX     only the tests whose name matches (to rerun one)
set -u
tests=${1:?usage: $0 path/to/tests}
tests=$(cd "$tests" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tt-meta.XXXXXX")
trap 'rm -rf "$work"' EXIT
ulimit -c 0

# fake_build DIR CODE: a build directory whose tunetop, tunetop-worker and test
# binaries (the *_full.sh scripts exec those) all end with CODE at once
fake_build() {
  local dir=$1 code=$2 f
  mkdir -p "$dir/tests"
  if [ "$code" -eq 139 ]; then
    printf '#!/bin/sh\nkill -SEGV $$\nexit 1\n' >"$dir/fake"
  else
    printf '#!/bin/sh\nexit %d\n' "$code" >"$dir/fake"
  fi
  chmod +x "$dir/fake"
  for f in tunetop tunetop-worker tests/test_gpu_opencl tests/test_gpu_cuda_compile; do
    cp "$dir/fake" "$dir/$f"
  done
}

scripts=()
for f in "$tests"/integration/*.sh "$tests"/e2e/*.sh "$tests"/mpi/*.sh; do
  [ "$(basename "$f")" = lib.sh ] && continue
  [ -n "${TT_META_ONLY:-}" ] && ! [[ $(basename "$f" .sh) =~ $TT_META_ONLY ]] && continue
  scripts+=("$f")
done
[ ${#scripts[@]} -gt 0 ] || { echo "FAIL no shell test found under $tests"; exit 1; }

bad=0
printf '%-32s %-8s %-5s %-5s %s\n' test tunetop exit secs verdict
for code in ${TT_META_CODES:-1 139}; do
  fake_build "$work/build$code" "$code"
  for f in "${scripts[@]}"; do
    name=$(basename "$f" .sh)
    # what CTest gives the test, pointing at the failing build; nothing is
    # required, so a skip cannot hide behind TUNETOP_REQUIRE
    t0=$SECONDS
    # (the braces keep bash's "Segmentation fault" notice out of the table)
    { (cd "$work" && env -u TUNETOP_REQUIRE TT_BINARY_DIR="$work/build$code" \
      TUNETOP_WORKER="$work/build$code/tunetop-worker" TT_MPI_BUILT=1 \
      timeout -k 10 300 bash "$f" "$work/build$code/tunetop") >"$work/$name.$code.out" 2>&1 </dev/null; } 2>/dev/null
    rc=$?
    case $rc in
      0) verdict="PASSES with a failing tunetop"; bad=$((bad + 1)) ;;
      77) verdict="SKIPS with a failing tunetop"; bad=$((bad + 1)) ;;
      124 | 137) verdict="TIMED OUT"; bad=$((bad + 1)) ;;
      *) verdict="fails, as it must" ;;
    esac
    printf '%-32s %-8s %-5s %-5s %s\n' "$name" "exit $code" "$rc" "$((SECONDS - t0))" "$verdict"
    if [ "$verdict" != "fails, as it must" ]; then tail -n 5 "$work/$name.$code.out" | sed 's/^/    | /'; fi
  done
done
if [ "$bad" -gt 0 ]; then
  echo "FAIL $bad shell test runs did not fail against a failing tunetop"
  exit 1
fi
echo "every shell test fails against a failing tunetop (${#scripts[@]} tests, exit codes ${TT_META_CODES:-1 139})"
