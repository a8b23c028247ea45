#!/usr/bin/env bash
# bench/mpi_bench.sh BUILD_DIR [REPEATS]: trials per second of one cpu tuning
# session run locally (no MPI) and under mpirun with 1, 2 and 3 measure
# servers (-np 2, 3, 4), median of REPEATS runs (default 3) each; the
# per-candidate compile and measure costs from the records; rank 0's CPU
# time per trial; one-way MPI latencies on loopback (mpi_latency_bench);
# and from those a model of N nodes (see bench/README.md).
set -u
B=${1:?usage: $0 BUILD_DIR [REPEATS]}
R=${2:-3}
TT=$B/tunetop
W=$(mktemp -d "${TMPDIR:-/tmp}/tt-mpibench.XXXXXX")
trap 'rm -rf "$W"' EXIT
TRIALS=${TRIALS:-48}
args=(tune --headless --tuner random --seed 7 --round-size 16 --no-roof --trials "$TRIALS"
      --task dense:m=64,n=64,k=64 --task conv2d:n=1,ci=16,h=14,w=14,co=16,kh=3,kw=3,stride=1,pad=1)
MPI=(mpirun --oversubscribe --allow-run-as-root --bind-to none)

lscpu | grep -E "Model name|^CPU\(s\)" | sed 's/  */ /g'
echo "trials per session: $TRIALS; repeats: $R"

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

run() { # run NAME NP: NP 0 = local
  local name=$1 np=$2 rates=() cpu=()
  for i in $(seq 1 "$R"); do
    local log="$W/$name.$i.log" t0 t1
    t0=$(date +%s.%N)
    if [ "$np" -eq 0 ]; then
      /usr/bin/time -f "%U %S" -o "$W/time" "$TT" "${args[@]}" --log "$log" </dev/null >/dev/null 2>&1
    else
      # rank 0 under /usr/bin/time (MPMD): its CPU seconds per trial
      "${MPI[@]}" -np 1 /usr/bin/time -f "%U %S" -o "$W/time" "$TT" "${args[@]}" --log "$log" : \
        -np $((np - 1)) "$TT" "${args[@]}" --log "$log" </dev/null >/dev/null 2>&1
    fi
    t1=$(date +%s.%N)
    local n
    n=$("$TT" dump "$log" | wc -l)
    rates+=("$(echo "$n / ($t1 - $t0)" | bc -l)")
    cpu+=("$(awk -v n="$n" '{print ($1 + $2) / n}' "$W/time")")
    echo "  $name run $i: $n trials in $(printf %.1f "$(echo "$t1 - $t0" | bc -l)") s, load $(cut -d' ' -f1 /proc/loadavg)" >&2
  done
  local rate c0
  rate=$(printf '%s\n' "${rates[@]}" | median)
  c0=$(printf '%s\n' "${cpu[@]}" | median)
  # per-candidate build and measure seconds from the last run's records
  local bs rs
  bs=$("$TT" dump "$W/$name.$R.log" | grep -o '"build_s":[0-9.e-]*' | cut -d: -f2 | awk '{s+=$1} END {print s/NR}')
  rs=$("$TT" dump "$W/$name.$R.log" | grep -o '"run_s":[0-9.e-]*' | cut -d: -f2 | awk '{s+=$1} END {print s/NR}')
  printf "%-10s\t%d\t%.3f\t%.3f\t%.4f\t%.4f\t%s\n" "$name" "$np" "$rate" "$bs" "$rs" "$c0" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

echo
echo -e "setup\tnp\ttrials/s\tbuild_s\trun_s\trank0_cpu_s/trial\tload (1, 5, 15 min)"
run local 0 | tee "$W/local"
run 1server 2 | tee "$W/s1"
run 2servers 3 | tee "$W/s2"
run 3servers 4 | tee "$W/s3"

echo
"${MPI[@]}" -np 2 "$B/bench/mpi_latency_bench" | tee "$W/lat"

# The model (bench/README.md): a node with C cores runs one server with C
# builders; a chunk of k candidates compiles in parallel, then is timed one by
# one (the node rule), so a node gives 1 / (build_s / C + run_s) trials/s.
# Rank 0 spends rank0_cpu_s per trial (engine, strategy, two messages), so the
# session tops out at 1 / rank0_cpu_s: it is the bottleneck from N* nodes on.
read -r _ _ _ bs rs c0 _ < <(tr '\t' ' ' <"$W/s2")
lat=$(awk -F'\t' '$1=="job" {j=$3} $1=="result" {r=$3} END {print (j + r) / 1e6}' "$W/lat")
echo
echo "model: build_s $bs, run_s $rs, rank 0 $c0 s/trial + messages $lat s (from the 2-server runs)"
echo -e "nodes\tcores/node\tpredicted trials/s\tbound"
for C in 2 32; do
  for N in 1 2 4 8 16 32 64 128 256; do
    awk -v N="$N" -v C="$C" -v b="$bs" -v m="$rs" -v c0="$c0" -v l="$lat" 'BEGIN {
      node = 1 / (b / C + m); cap = 1 / (c0 + l); r = N * node;
      printf "%d\t%d\t%.1f\t%s\n", N, C, (r < cap ? r : cap), (r < cap ? "nodes" : "rank 0") }'
  done
  awk -v C="$C" -v b="$bs" -v m="$rs" -v c0="$c0" -v l="$lat" 'BEGIN {
    printf "rank 0 becomes the bottleneck at N* = %.0f nodes of %d cores\n", (1 / (c0 + l)) / (1 / (b / C + m)), C }'
done
