#!/usr/bin/env bash
# Builds tunetop and runs the whole suite:
#   1. Release build: unit, session, integration and end-to-end (tmux) tests;
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build: unit, session and integration
#      tests, except the long GPU template sweeps (label gpu-full), which the
#      release pass runs in full.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

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
