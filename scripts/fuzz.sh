#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang (AddressSanitizer and
# UBSan) in build-fuzz/ and runs each one on its committed corpus.
#   scripts/fuzz.sh              each harness for 8 seconds (what scripts/test.sh runs)
#   scripts/fuzz.sh 600          each harness for 10 minutes
#   scripts/fuzz.sh 600 log_reader log_follow   only these harnesses
# New inputs go to a scratch directory, not to the committed corpus; a
# harness whose property breaks leaves its input in fuzz-crashes/ and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-8}
shift || true
# every harness of tests/fuzz (fuzz_NAME.c), so a new one cannot be left out
all=()
for f in tests/fuzz/fuzz_*.c; do
  f=${f##*/fuzz_}
  all+=("${f%.c}")
done
[ $# -gt 0 ] && harnesses=("$@") || harnesses=("${all[@]}")

corpus_of() {
  case $1 in
    log_reader | resume_append) echo log ;;
    log_follow) echo follow ;;
    *) echo "$1" ;;
  esac
}

CC=${FUZZ_CC:-clang} cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_FUZZ=ON >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}" >/dev/null

mkdir -p fuzz-crashes
status=0
for h in "${harnesses[@]}"; do
  work=$(mktemp -d "${TMPDIR:-/tmp}/tt-fuzz-$h.XXXXXX")
  out="$work/fuzz.out"
  set +e
  # -rss_limit_mb: a reader must never need much memory, whatever the input
  (cd "$work" && ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}" "$OLDPWD/build-fuzz/tests/fuzz/fuzz_$h" \
    -max_total_time="$secs" -rss_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$OLDPWD/fuzz-crashes/$h-" \
    . "$OLDPWD/tests/fuzz/corpus/$(corpus_of "$h")") >"$out" 2>&1
  rc=$?
  set -e
  # no stats line: libFuzzer did not end normally (or never started); say so and go on to the next harness
  execs=$(grep -a 'stat::number_of_executed_units' "$out" | awk '{print $2}' || true)
  corpus=$(find "$work" -maxdepth 1 -type f ! -name fuzz.out | wc -l)
  if [ -z "$execs" ]; then
    echo "fuzz $h: FAILED: no stats line (exit $rc); the end of its output:"
    tail -n 10 "$out"
    status=1
  elif [ $rc -eq 0 ]; then
    echo "fuzz $h: $execs executions in ${secs} s, no property broken (${corpus} new inputs found)"
  else
    echo "fuzz $h: FAILED after $execs executions:"
    grep -a -m3 -E 'property broken|ERROR|SUMMARY' "$out" || tail -n 20 "$out"
    status=1
  fi
  rm -rf "$work"
done
exit $status
