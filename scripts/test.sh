#!/usr/bin/env bash
# Builds tunetop and runs the whole suite:
#   0. the C sources against .clang-format (scripts/format.sh);
#   1. Release build: unit, session, integration and end-to-end (tmux) tests;
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build: unit, session and integration
#      tests, except the long GPU template sweeps (label gpu-full), which the
#      release pass runs in full;
#   3. ThreadSanitizer build: the tests that run threads;
#   4. the libFuzzer harnesses (clang), 8 seconds each.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "== source format: every C file against .clang-format (scripts/format.sh --fix rewrites them)"
bash scripts/format.sh

echo "== release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTT_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs" -L 'unit|session|integration|e2e'

echo "== sanitizer build (address + undefined)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTT_SANITIZE=address >/dev/null
cmake --build build-asan -j"$jobs"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:${LSAN_OPTIONS:-}"
ctest --test-dir build-asan --output-on-failure -j"$jobs" -L 'unit|session|integration' -LE gpu-full

echo "== thread sanitizer build: the tests that run threads (engine, builders, cost model refits, concurrent log appends)"
# Candidate kernels are built without OpenMP under TSan (kernels/targets/cpu/abi.h): libgomp is not
# instrumented, so its parallel regions would be reported as races. Any report here is a race in tunetop.
tsan_tests=(test_engine test_records test_cpu_target test_cpu_templates)
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_SANITIZE=thread >/dev/null
cmake --build build-tsan -j"$jobs" --target "${tsan_tests[@]}" tunetop-worker
TSAN_OPTIONS="halt_on_error=1:${TSAN_OPTIONS:-}" ctest --test-dir build-tsan --output-on-failure -j"$jobs" \
  -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$"

echo "== fuzzing: each libFuzzer harness of tests/fuzz for a few seconds on its corpus"
if command -v clang >/dev/null 2>&1; then
  scripts/fuzz.sh 8
else
  echo "clang is missing (scripts/install-deps.sh installs it): fuzzing skipped" >&2
  exit 1
fi
