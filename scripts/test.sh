#!/usr/bin/env bash
# Builds tunetop and runs the whole suite:
#   0. the C sources against .clang-format (scripts/format.sh);
#   1. Release build: unit, session, integration and end-to-end (tmux) tests;
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build: unit, session and integration
#      tests, except the long GPU template sweeps (label gpu-full), which the
#      release pass runs in full;
#   3. ThreadSanitizer build: every test that starts threads (the list is checked below);
#   4. the libFuzzer harnesses (clang), 8 seconds each.
# TUNETOP_REQUIRE names what this machine must have (what scripts/install-deps.sh
# installs): a test whose dependency is missing then fails, naming it, instead of
# being skipped (exit 77). Set it empty to run where they are not installed:
#   TUNETOP_REQUIRE= scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
export TUNETOP_REQUIRE=${TUNETOP_REQUIRE-opencl,xgboost,mpi,nvrtc}
echo "== required here (TUNETOP_REQUIRE): ${TUNETOP_REQUIRE:-nothing}"

echo "== source format: every C file against .clang-format (scripts/format.sh --fix rewrites them)"
bash scripts/format.sh

echo "== release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTT_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
# the machine's roofline figures, measured once on a quiet machine before tests run two at a time
# (a figure measured under the suite's own load would misjudge every task's roof)
./build/tunetop devices >/dev/null
ctest --test-dir build --output-on-failure -j"$jobs" -L 'unit|session|integration|e2e'

echo "== sanitizer build (address + undefined)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTT_SANITIZE=address >/dev/null
cmake --build build-asan -j"$jobs"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:${LSAN_OPTIONS:-}"
ctest --test-dir build-asan --output-on-failure -j"$jobs" -L 'unit|session|integration' -LE 'gpu-full|meta'

echo "== thread sanitizer build: every test that starts threads (engine, builders, cost model refits, GPU build timeouts, concurrent log appends)"
# Candidate kernels are built without OpenMP under TSan (kernels/targets/cpu/abi.h): libgomp is not
# instrumented, so its parallel regions would be reported as races. Any report here is a race in tunetop.
# Test programs (build targets) and their CTest entries (test_gpu_targets has one per device).
tsan_bins=(test_engine test_records test_cpu_target test_cpu_templates test_te_evolution test_xgb test_gpu_opencl
  test_gpu_cuda_compile test_gpu_targets)
tsan_tests=("${tsan_bins[@]}" test_gpu_targets_opencl)
# The list is the claim: a test source that starts threads (directly, or through the engine, the
# builders, the xgb strategy's refits, the GPU build threads or OpenMP) and is not in it fails the
# run, unless it is in tsan_omp_only: tests whose only threads are OpenMP's, over code that TSan
# cannot watch (libgomp is not instrumented, so every parallel region would be reported). Their
# check is their own: test_onnx_threads runs each op at 1 and 2 threads and compares bit for bit.
tsan_omp_only=(test_onnx_threads)
missing=()
for f in tests/unit/test_*.c tests/integration/test_*.c; do
  name=$(basename "$f" .c)
  if grep -qE 'pthread_create|Engine_new|Builder_new|strategy_xgb|strategy_evolution|[a-z_]+\.build\(|->build\(|Runner_measure|runner_new|omp_set_num_threads' "$f" &&
    [[ " ${tsan_bins[*]} ${tsan_omp_only[*]} " != *" $name "* ]]; then
    missing+=("$name")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "tests that start threads but are not in the TSan pass: ${missing[*]}" >&2
  exit 1
fi
echo "TSan runs: ${tsan_tests[*]}"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTT_SANITIZE=thread >/dev/null
cmake --build build-tsan -j"$jobs" --target "${tsan_bins[@]}" tunetop-worker
TSAN_OPTIONS="halt_on_error=1:${TSAN_OPTIONS:-}" ctest --test-dir build-tsan --output-on-failure -j"$jobs" \
  -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$"

echo "== fuzzing: each libFuzzer harness of tests/fuzz for a few seconds on its corpus"
if command -v clang >/dev/null 2>&1; then
  scripts/fuzz.sh 8
else
  echo "clang is missing (scripts/install-deps.sh installs it): fuzzing skipped" >&2
  exit 1
fi
