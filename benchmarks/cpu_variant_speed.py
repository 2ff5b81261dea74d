"""Decode speed of two llama-server builds on the same model, interleaved A/B/A/B so that load
drift on a shared machine hits both alike (docs/benchmarks.md, "CPU build variants").

    python benchmarks/cpu_variant_speed.py A=/path/to/native/llama-server B=/path/to/isa/llama-server \
        [--model SmolLM2.gguf] [--rounds 4] [--tokens 128] [--threads 2]

Per round each binary is started, warmed up with one request, then answers 3 requests of
`--tokens` forced tokens; the figure is the server-reported `timings.predicted_per_second`
(server-side decode rate, so client overhead does not enter). Prints median and spread per binary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from rigbench.rig import EMBEDDED_MODEL, EngineProcess, free_port


def _post(port: int, body: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def _round(binary: str, model: Path, tokens: int, threads: int, log: Path) -> list[float]:
    port = free_port()
    proc = EngineProcess([binary, "-m", str(model), "--port", str(port), "-c", "1024", "-np", "1",
                          "-t", str(threads), "--no-webui"], log)
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
        body = {"prompt": "Write a long story about a lighthouse keeper.", "n_predict": tokens,
                "ignore_eos": True, "temperature": 0, "cache_prompt": False}
        _post(port, {**body, "n_predict": 16})  # warm-up
        return [float(_post(port, body)["timings"]["predicted_per_second"]) for _ in range(3)]  # type: ignore[index]
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
    log = Path(tempfile.mkdtemp()) / "engine.log"
    for i in range(a.rounds):
        for name, path in (named if i % 2 == 0 else named[::-1]):
            got = _round(path, model, a.tokens, a.threads, log)
            rates[name] += got
            print(f"round {i + 1} {name}: " + ", ".join(f"{x:.1f}" for x in got) + " tok/s", flush=True)
    for name, xs in rates.items():
        print(f"{name}: median {statistics.median(xs):.1f} tok/s, mean {statistics.mean(xs):.1f}, "
              f"sd {statistics.stdev(xs):.1f}, n {len(xs)}")
    a_name, b_name = (n for n, _ in named)
    print(f"{b_name} / {a_name} median ratio: {statistics.median(rates[b_name]) / statistics.median(rates[a_name]):.3f}")
    print(f"model {model.name}; threads {a.threads}; tokens {a.tokens}; load {Path('/proc/loadavg').read_text().split()[:3]}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
