#!/usr/bin/env bash
# bench/fuzz_long.sh: long fuzzing runs, as issue 33 asks of the parsers (at
# least 10^7 executions each with no crash). Builds the harnesses as
# scripts/fuzz.sh does (clang, AddressSanitizer + UBSan, build-fuzz/) and runs
# the given ones one after the other through `scripts/fuzz.sh --runs N`, each to
# N executions (default 10^7) or until --max-time seconds (default 1500), and
# writes per harness the executions, wall and CPU seconds, executions per wall
# and per CPU second, the new corpus inputs and the crash inputs found, with
# the machine, the date and the load average, to bench/results/fuzz_long.md
# (--results FILE to write elsewhere). Not a test.
#   bench/fuzz_long.sh [--runs N] [--max-time SECS] [--results FILE] [HARNESS...]
#   nice -n 10 bench/fuzz_long.sh te_parse tvm_reader onnx_reader
set -euo pipefail
cd "$(dirname "$0")/.."
runs=10000000
max_time=1500
results=bench/results/fuzz_long.md
while [ $# -gt 0 ]; do
  case $1 in
    --runs)
      runs=$2
      shift 2
      ;;
    --max-time)
      max_time=$2
      shift 2
      ;;
    --results)
      results=$2
      shift 2
      ;;
    -h | --help)
      sed -n '2,12p' "$0"
      exit 0
      ;;
    -*)
      echo "fuzz_long: unknown option $1" >&2
      exit 2
      ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] && harnesses=("$@") || harnesses=(te_parse tvm_reader onnx_reader)

summary=$(mktemp "${TMPDIR:-/tmp}/tt-fuzz-long.XXXXXX")
rows=$(mktemp "${TMPDIR:-/tmp}/tt-fuzz-long-rows.XXXXXX")
trap 'rm -f "$summary" "$rows"' EXIT
machine="$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
started=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "fuzz_long: $started, $machine; $runs executions or $max_time s per harness" >&2
# one harness at a time (fuzz.sh runs them in turn, built once before the first)
status=0
FUZZ_SUMMARY=$summary scripts/fuzz.sh --runs "$runs" --max-time "$max_time" "${harnesses[@]}" >&2 || status=1
awk -F'\t' -v runs="$runs" '{
  reached = $2 >= runs ? "yes" : "no (time limit)"
  printf "| %s | %d | %s | %d | %.0f | %.0f | %.0f | %d | %d | %s to %s |\n",
    $1, $2, reached, $3, $4, ($3 > 0 ? $2 / $3 : 0), ($4 > 0 ? $2 / $4 : 0), $5, $6, $8, $9
}' "$summary" >"$rows"

{
  echo "# fuzz_long: latest results"
  echo
  echo "Long libFuzzer runs of the parsers (issue 33: at least 10^7 executions each, with 0 crashes), one harness"
  echo "at a time, built as \`scripts/fuzz.sh\` builds them (clang, AddressSanitizer + UBSan, RelWithDebInfo), each"
  echo "from its committed corpus to $runs executions or $max_time s, whichever came first."
  echo
  echo "Machine: $machine, shared with other work. Started $started."
  echo "Command: \`bench/fuzz_long.sh --runs $runs --max-time $max_time ${harnesses[*]}\` at niceness $(nice)."
  echo
  echo "| harness | executions | reached $runs | wall s | CPU s | exec/s (wall) | exec/s (CPU) | new inputs | crash inputs | load average |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  cat "$rows"
  echo
  echo "CPU s: user + system seconds of the fuzzer process; on a loaded machine exec/s per CPU second is the"
  echo "steadier figure. New inputs: inputs libFuzzer added to its scratch corpus (not committed)."
} >"$results"
cat "$results"
exit $status
