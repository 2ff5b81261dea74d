#!/bin/bash
# rigbench against GuideLLM, AIPerf and `vllm bench serve` on the quiet 16-core GPU host (no network):
# every mode of benchmarks/peers.py, results to $OUT. The kit is built here first (network), two
# folders of <= 50 MiB, each carried by one call (benchmarks/gpu/peers_kit.py; docs/benchmarks.md):
#
#   bash benchmarks/gpu/peers.sh install .dev/peers-kit-a   # carry .dev/peers-kit-a: AIPerf
#   bash benchmarks/gpu/peers.sh install .dev/peers-kit-b   # carry .dev/peers-kit-b: GuideLLM, vLLM's client,
#                                                           # rigbench's missing deps, the tokenizer; smoke test
#   bash benchmarks/gpu/peers.sh run                        # the emulator: every case, <= 10 min
#   bash benchmarks/gpu/peers.sh llama                      # the real llama-server (built by quiet_host.sh kit1..3)
#   bash benchmarks/gpu/peers.sh exec 'CMD'                 # CMD with the kit's environment
#
# Installs go to /tmp/peers (pip --target, one folder per tool: each tool sees its own pins, never
# rigbench's), which lasts while the machine stays warm between calls. `run` takes ROUNDS (default
# 2) and LANES (default 4: the emulator cases in 4 pinned lanes of 4 cores at once); the CPU cases
# then run alone, client on cores 0-3 and the server on core 4. EMU_S (400) and CPU_S (140) bound the two
# parts in seconds, CPU_CASES (cpu) and CPU_CORES (0-4) choose the CPU cases and their cores: on a small
# machine, e.g. `LANES=1 CPU_CORES=0-1 CPU_CASES=cpu-64 bash peers.sh run rate-constant`.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
P=${PEERS_DIR:-/tmp/peers}
PY=${PY:-python3}
OUT=${OUT:-/tmp/out}
export RIGBENCH_PEERS_DIR=$P RIGBENCH_PEERS_TOKENIZER=$P/smollm2-tokenizer
export PYTHONPATH=$P/site:$REPO/src PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p "$P" "$OUT"

. "$(dirname "$0")/host_line.sh"  # host_line

smoke() {  # each installed tool starts and says its version (a missing import shows here)
  [ -d "$P/aiperf-0.13.0" ] && echo "aiperf $(PYTHONPATH=$P/aiperf-0.13.0 $PY $P/aiperf-0.13.0/bin/aiperf --version 2>&1 | tail -1)"
  [ -d "$P/guidellm-0.8.1" ] && echo "guidellm: $(PYTHONPATH=$P/guidellm-0.8.1 $PY $P/guidellm-0.8.1/bin/guidellm --version 2>&1 | tail -1)"
  [ -d "$P/vllm-0.32.0" ] && echo "vllm bench serve: $(cd /tmp && PYTHONPATH=$P/vllm-0.32.0 $PY -c "import sys; sys.path.insert(0, '$REPO/benchmarks'); import peers_tools, subprocess; from pathlib import Path; subprocess.run([*peers_tools._vllm_launcher(Path('$P/vllm-0.32.0/bin/vllm')), 'bench', 'serve', '--help'], stdout=subprocess.DEVNULL, check=True); print('starts')" 2>&1 | tail -1)"
  [ -d "$P/site" ] && echo "rigbench: $($PY -m rigbench --version 2>&1 | tail -1)"
  return 0
}

case "${1:-}" in
  install)
    KIT=${2:?which kit folder}
    for list in "$KIT"/lists/*.txt; do
      name=$(basename "$list" .txt)
      $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$P/$name" \
          $(sed "s|^|$KIT/whl/|" "$list") || exit 1
      echo "installed $name ($(wc -l < "$list") wheels)"
    done
    [ -d "$KIT/tokenizer" ] && rm -rf "$P/smollm2-tokenizer" && cp -r "$KIT/tokenizer" "$P/smollm2-tokenizer"
    host_line; smoke
    ;;
  run)
    shift
    for d in aiperf-0.13.0 guidellm-0.8.1 vllm-0.32.0 site smollm2-tokenizer; do  # a machine that went cold lost them
      [ -d "$P/$d" ] || { echo "no $P/$d: run 'peers.sh install .dev/peers-kit-a' and '... peers-kit-b' first, on this warm machine"; exit 2; }
    done
    cd "$REPO"; host_line; smoke
    W=/tmp/peers-out; rm -rf $W; mkdir -p $W
    S=$SECONDS
    E=${EMU_S:-400}; C=${CPU_S:-140}
    timeout $E $PY benchmarks/peers.py --cases "${1:-rate,stall,modes}" --lanes "${LANES:-4}" --rounds "${ROUNDS:-2}" \
        --timeout-s 120 --deadline-s $((E - 20)) --json $W/peers-emulator.json > $W/peers-emulator.txt 2>&1
    echo "emulator cases rc=$? at $((SECONDS-S)) s"; host_line
    timeout $C $PY benchmarks/peers.py --cases "${CPU_CASES:-cpu}" --cpus "${CPU_CORES:-0-4}" --rounds "${ROUNDS:-2}" \
        --timeout-s 60 --deadline-s $((C - 10)) \
        --json $W/peers-cpu.json > $W/peers-cpu.txt 2>&1
    echo "cpu cases rc=$? at $((SECONDS-S)) s"; host_line
    # $OUT takes at most 8 files: the two tables and JSONs, and everything (lanes' JSON and logs) in one archive
    cp $W/peers-emulator.txt $W/peers-cpu.txt "$OUT"/ 2>/dev/null
    cp $W/peers-emulator.json $W/peers-cpu.json "$OUT"/ 2>/dev/null
    (cd /tmp && tar czf "$OUT/peers-run.tgz" peers-out)
    grep -v '^{' $W/peers-emulator.txt $W/peers-cpu.txt | tail -80
    ;;
  llama)  # quiet_host.sh's kit: its llama-server build and the SmolLM2 GGUF under RIGBENCH_CACHE_DIR
    shift
    cd "$REPO"; host_line
    export RIGBENCH_CACHE_DIR=${RIGBENCH_CACHE_DIR:-/tmp/kit/cache}
    S=$SECONDS
    # llama-server (a child of peers.py) on cores 0-7 with 8 threads; the tools on 8-14 (LLAMA_CORES, TOOL_CORES,
    # LLAMA_THREADS and LLAMA_S, the budget in seconds, for another machine)
    L=${LLAMA_S:-540}
    taskset -c "${LLAMA_CORES:-0-7}" timeout $L $PY benchmarks/peers.py --target llama --cpus "${TOOL_CORES:-8-15}" \
        --llama-threads "${LLAMA_THREADS:-8}" --timeout-s 200 --deadline-s $((L - 20)) \
        --cases "${1:-rate-poisson,rate-constant-cap,goodput,trace,sessions,sweep,cpu-1-slow}" --rounds "${ROUNDS:-1}" \
        --json "$OUT/peers-llama.json" > "$OUT/peers-llama.txt" 2>&1
    echo "llama cases rc=$? at $((SECONDS-S)) s"; host_line
    grep -v '^{' "$OUT/peers-llama.txt" | tail -60
    ;;
  exec)
    shift
    cd "$REPO"; host_line; bash -c "$*"
    ;;
  *) sed -n 2,18p "$0"; exit 2 ;;
esac
