"""Decode speed of two llama-server builds on the same model, interleaved A/B/A/B so that load
drift on a shared machine hits both alike (docs/benchmarks.md, "CPU build variants").

    python benchmarks/cpu_variant_speed.py A=/path/to/native/llama-server B=/path/to/isa/llama-server \
        [--model SmolLM2.gguf] [--rounds 4] [--tokens 128] [--threads 2]

Per round each binary is started, warmed up with one request, then answers 3 requests of
`--tokens` forced tokens; the figure is the server-reported `timings.predicted_per_second`
(server-side decode rate, so client overhead does not enter), and the prompt's `prompt_per_second`
(prefill). Prints median and spread per binary, and its start-up (spawn -> /health 200).
Also used for the prebuilt against the build (docs/benchmarks.md, "The embedded default"):
    python benchmarks/cpu_variant_speed.py built=~/.cache/rigbench/llama-server/11434.0.0-*/bin/llama-server \
        prebuilt=~/.cache/rigbench/llama-server/prebuilt-xllamacpp-*/bin/llama-server
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

from rigbench.rig import EMBEDDED_MODEL, EngineProcess, free_port


def _post(port: int, body: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


class Round(NamedTuple):
    decode: list[float]  # tok/s, server-reported
    prefill: list[float]  # prompt tok/s, server-reported
    start_s: float  # spawn -> /health 200
    tok_per_cpu_s: float  # generated tokens per CPU-second of the engine (all its threads), prefill included


def _cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of a process (all its threads), from /proc: on a shared machine the
    wall-clock rate measures the neighbours too, the CPU time per token much less (with -t 1: no thread
    waits for another one that was descheduled)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _round(binary: str, model: Path, tokens: int, threads: int, log: Path) -> Round:
    port = free_port()
    proc = EngineProcess([binary, "-m", str(model), "--port", str(port), "-c", "1024", "-np", "1",
                          "-t", str(threads), "--no-webui"], log)
    t0 = time.monotonic()
    proc.start(port=port)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        start_s = time.monotonic() - t0
        body = {"prompt": "Write a long story about a lighthouse keeper. " * 8, "n_predict": tokens,
                "ignore_eos": True, "temperature": 0, "cache_prompt": False}
        _post(port, {**body, "n_predict": 16})  # warm-up
        cpu0 = _cpu_s(proc.pid)
        timings = [_post(port, body)["timings"] for _ in range(3)]
        cpu = _cpu_s(proc.pid) - cpu0
        return Round([float(t["predicted_per_second"]) for t in timings],  # type: ignore[index]
                     [float(t["prompt_per_second"]) for t in timings], start_s,  # type: ignore[index]
                     3 * tokens / cpu if cpu > 0 else float("nan"))
    finally:
        proc.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs=2, help="NAME=PATH twice")
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    model = a.model or EMBEDDED_MODEL.resolve()
    named = [b.split("=", 1) for b in a.binaries]
    rates: dict[str, list[float]] = {n: [] for n, _ in named}
    prefill: dict[str, list[float]] = {n: [] for n, _ in named}
    starts: dict[str, list[float]] = {n: [] for n, _ in named}
    per_cpu: dict[str, list[float]] = {n: [] for n, _ in named}
    log = Path(tempfile.mkdtemp()) / "engine.log"
    for i in range(a.rounds):
        for name, path in (named if i % 2 == 0 else named[::-1]):
            got = _round(path, model, a.tokens, a.threads, log)
            rates[name] += got.decode
            prefill[name] += got.prefill
            starts[name].append(got.start_s)
            per_cpu[name].append(got.tok_per_cpu_s)
            print(f"round {i + 1} {name}: decode " + ", ".join(f"{x:.1f}" for x in got.decode) + " tok/s; prefill "
                  + ", ".join(f"{x:.0f}" for x in got.prefill) + f" tok/s; start {got.start_s:.2f} s; {got.tok_per_cpu_s:.1f} tok per CPU-s", flush=True)
    for name, xs in rates.items():
        print(f"{name}: decode median {statistics.median(xs):.1f} tok/s, mean {statistics.mean(xs):.1f}, "
              f"sd {statistics.stdev(xs):.1f}, n {len(xs)}; prefill median {statistics.median(prefill[name]):.0f} "
              f"tok/s; start median {statistics.median(starts[name]):.2f} s; "
              f"{statistics.median(per_cpu[name]):.1f} tok per engine CPU-s (median)")
    a_name, b_name = (n for n, _ in named)
    print(f"{b_name} / {a_name} median ratio: {statistics.median(rates[b_name]) / statistics.median(rates[a_name]):.3f}"
          f" (decode tok/s), {statistics.median(per_cpu[b_name]) / statistics.median(per_cpu[a_name]):.3f}"
          " (tokens per engine CPU-s)")
    print(f"model {model.name}; threads {a.threads}; tokens {a.tokens}; load {Path('/proc/loadavg').read_text().split()[:3]}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
