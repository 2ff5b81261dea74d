#!/usr/bin/env bash
# The timing tests, N times in a row, while the rest of the unit suite runs beside them (issue 25,
# item 7: every timing test must pass N in N on a 2-core box under that load).
#
#   bash benchmarks/timing_repeat.sh 10 benchmarks/results/timing_10x_2core.log
#
# The neighbour is `pytest tests/unit -x -k 'not accuracy'` in a loop, in its own process group,
# stopped (by that group's id) when the N runs are done. Each run's pytest summary and exit
# status go to the log, with the load average before it.
set -u
N=${1:-10}
LOG=${2:-benchmarks/results/timing_repeat.log}
# TIMING_TESTS (space-separated) replaces the default set, e.g. the unit files alone.
read -r -a TESTS <<< "${TIMING_TESTS:-tests/unit/test_accuracy.py tests/unit/test_stamping.py tests/scale/test_ray_clients.py::test_four_actors_of_64_streams_within_the_single_process_bound_skewed_clocks_corrected}"
setsid bash -c 'while :; do python -m pytest -q -p no:cacheprovider tests/unit -x -k "not accuracy" >/dev/null 2>&1; done' &
NEIGHBOUR=$!
trap 'kill -- -$NEIGHBOUR 2>/dev/null' EXIT
{
  echo "timing tests x$N: ${TESTS[*]}"
  echo "neighbour: pytest tests/unit -x -k 'not accuracy' in a loop"
  echo "machine: $(uname -n) $(uname -m), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "python: $(python -V 2>&1), commit $(git rev-parse --short HEAD), started $(date -u +%FT%TZ)"
} > "$LOG"
sleep 20  # let the neighbour get going
passed=0
for i in $(seq 1 "$N"); do
  echo "== run $i $(date -u +%FT%TZ) loadavg $(cut -d' ' -f1-3 /proc/loadavg)" >> "$LOG"
  python -m pytest -q -p no:cacheprovider -rA "${TESTS[@]}" 2>&1 | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|error" >> "$LOG"
  rc=${PIPESTATUS[0]}
  echo "== run $i exit $rc" >> "$LOG"
  [ "$rc" -eq 0 ] && passed=$((passed + 1))
done
echo "== $passed of $N runs passed, finished $(date -u +%FT%TZ)" >> "$LOG"
