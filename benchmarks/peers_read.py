"""Each tool's own output, read back for benchmarks/peers.py (their export formats at the pinned
versions: docs/metrics.md "Peers"). What a tool reports is taken as it reports it: its TTFT under its
own definition, its goodput and its saturation estimate, never recomputed here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigbench.analysis import arrival_ns, request_timing
from rigbench.records import StreamResult


@dataclass
class Reported:
    """What one tool reported, per request (seconds) and in summary."""

    ttft_s: list[float] = field(default_factory=list)  # the tool's own TTFT (from its send, or as defined)
    ttft_response_s: list[float] = field(default_factory=list)  # from the intended start, where a tool has it
    e2e_scheduled_s: list[float] = field(default_factory=list)  # e2e from the scheduled start (GuideLLM)
    itl_mean_s: list[float] = field(default_factory=list)  # per-request mean ITL
    itl_gaps_s: list[float] = field(default_factory=list)  # pooled per-chunk gaps (vLLM's ITL)
    prompt_tokens: list[int] = field(default_factory=list)  # what the tool believed it sent
    output_tokens: list[int] = field(default_factory=list)
    first_mono_ns: list[int] = field(default_factory=list)  # first-token stamps on CLOCK_MONOTONIC
    first_wall_ns: list[int] = field(default_factory=list)  # ... or on the wall clock
    ids: list[str | None] = field(default_factory=list)  # the server's response id per request, where kept
    ok: int = 0
    failed: int = 0
    goodput_rps: float | None = None
    attainment: float | None = None  # fraction of requests that met the SLO
    throughput_rps: float | None = None
    saturation_rps: float | None = None  # a sweep's estimate of the most the server sustains
    points: list[dict[str, Any]] = field(default_factory=list)  # a sweep's (rate, throughput) points
    notes: list[str] = field(default_factory=list)


def read(tool: str, out: Path) -> Reported:
    return {"rigbench": _rigbench, "guidellm": _guidellm, "aiperf": _aiperf, "vllm": _vllm}[tool](out)


def _rigbench(out: Path) -> Reported:
    p = Reported()
    rows = {}
    jl = out / "requests.jsonl"
    if jl.exists():  # rigbench's own per-request export: the figures as it reports them
        rows = {d["unit_id"]: d for d in map(json.loads, jl.read_text().splitlines())}
    for f in out.glob("*/records.jsonl"):
        latest: dict[str, dict[str, Any]] = {}
        for line in f.read_text().splitlines():
            d = json.loads(line)
            if d.get("kind") in ("speed_request", "load_request") and not d.get("warmup"):
                latest[d["unit_id"]] = d
        for uid, d in latest.items():
            r = StreamResult.model_validate(d["result"])
            if r.error is not None or not r.chunk_ns:
                p.failed += 1
                continue
            p.ok += 1
            t = request_timing(r, output_tokens_target=d.get("output_tokens_target"))
            p.ttft_s.append(t.ttft_s if t.ttft_s is not None else t.first_chunk_s or 0.0)
            p.first_mono_ns.append(arrival_ns(r)[0][0])
            p.ids.append(r.response_id)
            if t.itl_mean_s is not None:
                p.itl_mean_s.append(t.itl_mean_s)
            p.itl_gaps_s.extend(t.itl_s)
            p.prompt_tokens.append(d.get("input_tokens_measured") or d.get("input_tokens_target") or 0)
            p.output_tokens.append(t.output_tokens)
            row = rows.get(uid)
            if row and row.get("ttft_response_s") is not None:
                p.ttft_response_s.append(row["ttft_response_s"])
    an = out / "analysis.json"
    if an.exists():
        load = (json.loads(an.read_text()).get("sections") or {}).get("load") or {}
        wins = load.get("windows") or []
        if wins and wins[0].get("slo"):
            s = wins[0]["slo"]
            p.goodput_rps, p.attainment = s.get("goodput_rps"), s.get("fraction")
        if wins:
            p.throughput_rps = wins[-1].get("throughput_rps")
        sat = [w for w in wins if w.get("mode") == "saturation"]
        if sat:
            p.saturation_rps = sat[0].get("throughput_rps")
        p.points = [{"offered_rps": w.get("offered_rate_rps"), "throughput_rps": w.get("throughput_rps"),
                     "mode": w.get("mode")} for w in wins]
    return p


def _guidellm(out: Path) -> Reported:
    p = Reported()
    doc = json.loads((out / "benchmarks.json").read_text())
    for b in doc.get("benchmarks", []):
        strategy = ((b.get("config") or {}).get("strategy") or {})
        metrics = b.get("metrics") or {}
        rps = ((metrics.get("requests_per_second") or {}).get("successful") or {}).get("mean")
        p.points.append({"mode": strategy.get("type_"), "offered_rps": strategy.get("rate"), "throughput_rps": rps})
        if strategy.get("type_") == "throughput":
            p.saturation_rps = rps
        p.throughput_rps = rps
        good = metrics.get("request_goodput")
        if isinstance(good, dict):
            good = (good.get("successful") or good).get("mean")
        if isinstance(good, (int, float)):
            p.goodput_rps = float(good)
        att = metrics.get("slo_attainment")
        if isinstance(att, dict):
            att = att.get("value", att.get("mean"))
        if isinstance(att, (int, float)):
            p.attainment = float(att)
        reqs = b.get("requests") or {}
        p.failed += len(reqs.get("errored") or []) + len(reqs.get("incomplete") or [])
        for r in reqs.get("successful") or []:
            p.ok += 1
            p.ids.append(r.get("response_id"))
            if r.get("time_to_first_token_ms") is not None:
                p.ttft_s.append(r["time_to_first_token_ms"] / 1e3)
                start = r.get("request_start_time")  # time.time() seconds
                if isinstance(start, (int, float)):
                    p.first_wall_ns.append(int(start * 1e9 + r["time_to_first_token_ms"] * 1e6))
            if r.get("inter_token_latency_ms") is not None:
                p.itl_mean_s.append(r["inter_token_latency_ms"] / 1e3)
            if r.get("request_scheduled_latency") is not None:
                p.e2e_scheduled_s.append(float(r["request_scheduled_latency"]))
            if r.get("prompt_tokens") is not None:
                p.prompt_tokens.append(int(r["prompt_tokens"]))
            if r.get("output_tokens") is not None:
                p.output_tokens.append(int(r["output_tokens"]))
    return p


def _aiperf_val(m: dict[str, Any], key: str) -> float | None:
    v = m.get(key)
    if isinstance(v, dict):
        v = v.get("value")
    return float(v) if isinstance(v, (int, float)) else None


def _aiperf(out: Path) -> Reported:
    p = Reported()
    files = sorted(out.rglob("profile_export*.jsonl"))
    files = [f for f in files if not f.name.endswith("_raw.jsonl")] or files
    for f in files[:1]:
        for line in f.read_text().splitlines():
            d = json.loads(line)
            meta, m = d.get("metadata") or {}, d.get("metrics", d)
            if meta.get("benchmark_phase", "profiling") != "profiling":
                continue
            if d.get("error"):
                p.failed += 1
                continue
            ttft = _aiperf_val(m, "time_to_first_token")
            if ttft is None:
                p.failed += 1
                continue
            p.ok += 1
            p.ids.append(None)
            p.ttft_s.append(ttft / 1e3)  # AIPerf exports milliseconds
            start = meta.get("request_start_ns")  # time.time_ns()
            if isinstance(start, int):
                p.first_wall_ns.append(start + int(ttft * 1e6))
            itl, isl, osl = (_aiperf_val(m, k) for k in ("inter_token_latency", "input_sequence_length",
                                                         "output_sequence_length"))
            if itl is not None:
                p.itl_mean_s.append(itl / 1e3)
            if isl is not None:
                p.prompt_tokens.append(int(isl))
            if osl is not None:
                p.output_tokens.append(int(osl))
    summary = sorted(out.rglob("profile_export_aiperf.json"))
    if summary:
        s = json.loads(summary[0].read_text())
        p.throughput_rps = (s.get("request_throughput") or {}).get("avg")
        good, frac = s.get("goodput"), s.get("good_request_fraction")
        if isinstance(good, dict):
            p.goodput_rps = good.get("avg")
        if isinstance(frac, dict) and isinstance(frac.get("avg"), (int, float)):
            p.attainment = frac["avg"] / 100 if frac.get("unit") == "%" else frac["avg"]
    return p


def _vllm(out: Path) -> Reported:
    p = Reported()
    d = json.loads((out / "vllm.json").read_text())
    errors = d.get("errors") or []
    ttfts = d.get("ttfts") or []
    for i, x in enumerate(ttfts):
        if (i < len(errors) and errors[i]) or not x:
            p.failed += 1
            continue
        p.ok += 1
        p.ids.append(None)
        p.ttft_s.append(float(x))
    for gaps in d.get("itls", []):
        p.itl_gaps_s.extend(float(x) for x in gaps)
    for lat, ttft, n in zip(d.get("latencies") or [], ttfts, d.get("output_lens") or [], strict=False):
        if lat and ttft and n and n > 1:
            p.itl_mean_s.append((lat - ttft) / (n - 1))  # vLLM's TPOT, per request
    p.prompt_tokens = [int(x) for x in d.get("input_lens", [])]
    p.output_tokens = [int(x) for x in d.get("output_lens", [])]
    p.throughput_rps = d.get("request_throughput")
    p.goodput_rps = d.get("request_goodput")
    if p.goodput_rps is not None and p.throughput_rps:  # vLLM reports no fraction: both over one duration
        p.attainment = p.goodput_rps / p.throughput_rps
        p.notes.append("attainment derived: request_goodput / request_throughput (one duration)")
    return p
