#!/usr/bin/env bash
# Runs the release suite (what scripts/test.sh's first pass runs) several times in
# a row on the existing build/, stopping at the first failing run: a test that
# fails one time in ten shows here before it shows in CI.
#   scripts/soak.sh            10 runs
#   scripts/soak.sh 5 --busy 2 5 runs, with 2 busy-looping processes beside them (the load)
# Each run prints its tests, seconds and the load average at its end; the
# failing run's ctest output is kept in build/soak-fail.log.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
shift || true
busy=0
if [ "${1:-}" = --busy ]; then busy=${2:?--busy needs a count}; fi
[ -x build/tunetop ] || { echo "soak: no build/tunetop: run scripts/build.sh (or scripts/test.sh) first" >&2; exit 1; }
export TUNETOP_REQUIRE=${TUNETOP_REQUIRE-opencl,xgboost,mpi,nvrtc}

pids=()
stop_busy() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_busy EXIT
for ((i = 0; i < busy; i++)); do
  sha256sum /dev/zero >/dev/null &
  pids+=($!)
done

echo "soak: $runs runs of the release suite on $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores), $busy busy processes beside"
for ((r = 1; r <= runs; r++)); do
  start=$(date +%s)
  out=$(mktemp)
  if ctest --test-dir build -j"$(nproc)" -L 'unit|session|integration|e2e' >"$out" 2>&1; then rc=0; else rc=$?; fi
  secs=$(($(date +%s) - start))
  summary=$(grep -E 'tests passed' "$out" || echo "no summary")
  echo "run $r/$runs: $summary, ${secs} s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ $rc -ne 0 ]; then
    cp "$out" build/soak-fail.log
    grep -E '\*\*\*|Failed|Timeout' "$out" | head -20
    echo "soak: run $r failed (its output: build/soak-fail.log)"
    rm -f "$out"
    exit 1
  fi
  rm -f "$out"
done
echo "soak: $runs runs in a row passed"
