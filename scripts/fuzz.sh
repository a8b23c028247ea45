#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang (AddressSanitizer and
# UBSan) in build-fuzz/ and runs each one on its committed corpus.
#   scripts/fuzz.sh              each harness for 8 seconds (what scripts/test.sh runs)
#   scripts/fuzz.sh 600          each harness for 10 minutes
#   scripts/fuzz.sh 600 log_reader log_follow   only these harnesses
#   scripts/fuzz.sh --runs 10000000 [--max-time 1500] te_parse
#                                each harness to 10^7 executions (or until
#                                --max-time seconds, whichever comes first)
# New inputs go to a scratch directory, not to the committed corpus; a
# harness whose property breaks leaves its input in fuzz-crashes/ and fails.
# With FUZZ_SUMMARY=FILE, one tab-separated line per harness is appended to
# FILE: name, executions, wall seconds, CPU seconds, new inputs, crash inputs
# written, exit status, the 1-minute load average before and after (bench/fuzz_long.sh
# reads it).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=8
runs=
if [ "${1:-}" = --runs ]; then
  runs=${2:?--runs wants a count}
  shift 2
  secs=
  if [ "${1:-}" = --max-time ]; then
    secs=${2:?--max-time wants seconds}
    shift 2
  fi
elif [ $# -gt 0 ]; then
  secs=$1
  shift
fi
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

# user + system seconds of the children that have ended, from the output of
# bash's `times` in FILE (its second line; `times` runs in this shell, not in
# a $(...) subshell, which has no children of its own)
children_cpu() {
  awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] } } END { printf "%.1f", s }' "$1"
}

limits=()
[ -n "$runs" ] && limits+=(-runs="$runs")
[ -n "$secs" ] && limits+=(-max_total_time="$secs")
mkdir -p fuzz-crashes
status=0
for h in "${harnesses[@]}"; do
  work=$(mktemp -d "${TMPDIR:-/tmp}/tt-fuzz-$h.XXXXXX")
  # the log beside the new inputs' directory, not in it: libFuzzer rereads
  # that directory every second and would load its own growing log as an input
  mkdir "$work/new"
  out="$work/fuzz.out"
  touch "$work/start"
  load0=$(cut -d' ' -f1 /proc/loadavg)
  set +e
  t0=$(date +%s.%N)
  times >"$work/times0"
  # -rss_limit_mb: a reader must never need much memory, whatever the input
  (cd "$work" && ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}" "$OLDPWD/build-fuzz/tests/fuzz/fuzz_$h" \
    "${limits[@]}" -rss_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$OLDPWD/fuzz-crashes/$h-" \
    new "$OLDPWD/tests/fuzz/corpus/$(corpus_of "$h")") >"$out" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  times >"$work/times1"
  set -e
  took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
  cpu=$(awk -v a="$(children_cpu "$work/times0")" -v b="$(children_cpu "$work/times1")" 'BEGIN { printf "%.1f", b - a }')
  # no stats line: libFuzzer did not end normally (or never started); say so and go on to the next harness
  execs=$(grep -a 'stat::number_of_executed_units' "$out" | awk '{print $2}' || true)
  corpus=$(find "$work/new" -maxdepth 1 -type f | wc -l)
  crashes=$(find fuzz-crashes -maxdepth 1 -type f -name "$h-*" -newer "$work/start" | wc -l)
  if [ -z "$execs" ]; then
    echo "fuzz $h: FAILED: no stats line (exit $rc); the end of its output:"
    tail -n 10 "$out"
    status=1
  elif [ $rc -eq 0 ]; then
    echo "fuzz $h: $execs executions in ${took} s, no property broken (${corpus} new inputs found)"
  else
    echo "fuzz $h: FAILED after $execs executions:"
    grep -a -m3 -E 'property broken|ERROR|SUMMARY' "$out" || tail -n 20 "$out"
    status=1
  fi
  if [ -n "${FUZZ_SUMMARY:-}" ]; then
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$h" "${execs:-0}" "$took" "$cpu" "$corpus" "$crashes" "$rc" \
      "$load0" "$(cut -d' ' -f1 /proc/loadavg)" >>"$FUZZ_SUMMARY"
  fi
  rm -rf "$work"
done
exit $status
