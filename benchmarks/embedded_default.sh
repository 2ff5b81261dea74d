#!/bin/bash
# Time the README's first command on this machine, as a new user meets it (docs/benchmarks.md,
# "The embedded default"):
#   COLD=1 bash benchmarks/embedded_default.sh 3
#     a fresh clone of this checkout's HEAD, a fresh venv, an empty RIGBENCH_CACHE_DIR, then the README's
#     `python3 -m pip install . && rigbench run` timed step by step (the first run fetches the prebuilt
#     llama-server and SmolLM2, smoke-tests, runs the default), then 3 more default runs with the cache warm
#   bash benchmarks/embedded_default.sh 3            3 default runs with this environment's rigbench and cache
#   RIGBENCH_LLAMA_BUILD=isa COLD=1 bash ...         the same through the fallback build (times the compile)
#   TASKSET="taskset -c 0,1" COLD=1 bash ...         pin to 2 cores of a bigger quiet host
#   RUN_ARGS=--allow-busy-host COLD=1 bash ...        on a shared machine, where the busy-host check would stop
#                                                     the run: it then measures on and says so (indicative only)
# Each step prints wall seconds and CPU seconds (user + sys, rigbench and the engine it started): on a
# shared machine the wall time measures the neighbours too, so the load average is printed around every
# step. Keep the whole output under benchmarks/results/.
set -u
N=${1:-3}
W=$(mktemp -d)
T=${TASKSET:-}
read -r -a RA <<< "${RUN_ARGS:-}"
step() {  # step NAME CMD...: run CMD, print its wall and CPU seconds with the load before and after
  local name=$1; shift
  local before; before=$(cut -d' ' -f1-3 /proc/loadavg)
  /usr/bin/time -o "$W/time" -f "%e %U %S" "$@" > "$W/$name.log" 2>&1
  local rc=$?
  read -r wall user sys < "$W/time"
  echo "$name: ${wall} s wall, $(awk "BEGIN{print $user + $sys}") s CPU, exit $rc; load before $before, after $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -o "verdict [a-zA-Z]*" "$W/$name.log" | head -1
  return $rc
}
echo "start $(date -u +%FT%TZ); nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); run args: ${RUN_ARGS:-none}"
if [ "${COLD:-0}" = 1 ]; then
  SRC=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
  git clone -q "$SRC" "$W/clone" && git -C "$W/clone" log -1 --format='commit %h %s' | cut -c1-100
  python3 -m venv "$W/venv"
  export RIGBENCH_CACHE_DIR=$W/cache PATH=$W/venv/bin:$PATH
  cd "$W/clone" || exit 1
  step pip_install $T python3 -m pip install -q . || { tail -20 "$W/pip_install.log"; exit 1; }
  step first_run $T rigbench run "${RA[@]}" || tail -30 "$W/first_run.log"
  grep -E "llama-server|smoke test|fetching|building" "$W/first_run.log" | tr -s ' \n' ' ' | cut -c1-400; echo
  grep -hs '"origin"' "$RIGBENCH_CACHE_DIR"/llama-server/smoke/*.json | head -1
fi
cd "$W" || exit 1
for i in $(seq "$N"); do
  step "run$i" $T rigbench run "${RA[@]}" || tail -20 "$W/run$i.log"
done
echo "end $(date -u +%FT%TZ); logs in $W"
