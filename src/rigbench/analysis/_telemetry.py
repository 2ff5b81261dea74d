"""Derived server telemetry: acceptance, KV-cache peaks, and client-vs-server timing agreement.

Counters are differenced between the last scrape before and the first scrape after a scenario,
so other traffic before or after does not leak in (traffic *during* it does; rigbench runs one
scenario at a time). Conventions (docs/metrics.md, "Statistics and models"):

  mean acceptance length = 1 + accepted / drafts     (tokens per target pass, bonus token included;
                                                      vLLM's and llama.cpp's convention)
  acceptance rate        = accepted / draft tokens
  per-position rate[i]   = accepted at position i / drafts
  SGLang exports only per-batch gauges: its acceptance length is the mean of the nonzero
  `spec_accept_length` samples taken during the scenario (labelled source="gauge_mean").
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import Field

from rigbench.analysis._timing import request_timing
from rigbench.records import Frozen, StreamResult, TelemetryRecord, TelemetrySample

__all__ = [
    "TIMING_AGREEMENT_TOLERANCE",
    "ScenarioTelemetry",
    "TimingCrossCheck",
    "cross_check_timings",
    "summarize_telemetry",
]

TIMING_AGREEMENT_TOLERANCE = 0.10  # client and server decode rates within 10% agree


class ScenarioTelemetry(Frozen):
    scenario: str
    concurrency: int
    engine: str
    samples: int
    during_samples: int
    sample_rate_hz: float | None  # achieved rate of the "during" scrapes
    unavailable: str | None = None
    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    mean_acceptance_length: float | None = None
    acceptance_length_source: Literal["counters", "gauge_mean"] | None = None
    acceptance_rate: float | None = None
    per_position_acceptance: list[float] = Field(default_factory=list)
    kv_usage_peak: float | None = None  # 0..1
    requests_running_peak: float | None = None
    requests_waiting_peak: float | None = None
    generation_tokens: float | None = None  # server-counted tokens generated during the scenario
    kv_pool_tokens: float | None = None


def _edge(samples: Sequence[TelemetrySample], phase: str, last: bool) -> TelemetrySample | None:
    ok = [s for s in samples if s.phase == phase and s.error is None]
    if not ok:
        return None
    return ok[-1] if last else ok[0]


def _delta(a: TelemetrySample | None, b: TelemetrySample | None, key: str) -> float | None:
    if a is None or b is None or key not in a.values or key not in b.values:
        return None
    d = b.values[key] - a.values[key]
    return d if d >= 0 else None  # a counter that went down: the server restarted in between


def _peak(samples: Sequence[TelemetrySample], key: str) -> float | None:
    vals = [s.values[key] for s in samples if s.error is None and key in s.values]
    return max(vals) if vals else None


def summarize_telemetry(records: Iterable[TelemetryRecord]) -> list[ScenarioTelemetry]:
    out: list[ScenarioTelemetry] = []
    for r in records:
        during = [s for s in r.samples if s.phase == "during" and s.error is None]
        rate = None
        if len(during) >= 2:
            span = (during[-1].t_ns - during[0].t_ns) / 1e9
            rate = (len(during) - 1) / span if span > 0 else None
        before = _edge(r.samples, "before", last=True)
        after = _edge(r.samples, "after", last=False)
        drafts = _delta(before, after, "spec_drafts_total")
        draft_tokens = _delta(before, after, "spec_draft_tokens_total")
        accepted = _delta(before, after, "spec_accepted_tokens_total")
        mal = acc_rate = None
        source: Literal["counters", "gauge_mean"] | None = None
        per_pos: list[float] = []
        if drafts and accepted is not None:
            mal, source = 1.0 + accepted / drafts, "counters"
            if before is not None and after is not None and after.accepted_per_pos:
                per_pos = [
                    (after.accepted_per_pos[p] - before.accepted_per_pos.get(p, 0.0)) / drafts
                    for p in sorted(after.accepted_per_pos)
                ]
        else:
            gauge = [s.values["spec_accept_length"] for s in during if s.values.get("spec_accept_length")]
            if gauge:
                mal, source = statistics.fmean(gauge), "gauge_mean"
        if draft_tokens and accepted is not None:
            acc_rate = accepted / draft_tokens
        elif source == "gauge_mean":
            rates = [s.values["spec_accept_rate"] for s in during if s.values.get("spec_accept_rate")]
            acc_rate = statistics.fmean(rates) if rates else None
        all_ok = [s for s in r.samples if s.error is None]
        out.append(ScenarioTelemetry(
            scenario=r.scenario, concurrency=r.concurrency, engine=r.engine, samples=len(r.samples),
            during_samples=len(during), sample_rate_hz=rate, unavailable=r.unavailable,
            drafts=drafts, draft_tokens=draft_tokens, accepted_tokens=accepted,
            mean_acceptance_length=mal, acceptance_length_source=source, acceptance_rate=acc_rate,
            per_position_acceptance=per_pos, kv_usage_peak=_peak(all_ok, "kv_cache_usage_ratio"),
            requests_running_peak=_peak(all_ok, "requests_running"),
            requests_waiting_peak=_peak(all_ok, "requests_waiting"),
            generation_tokens=_delta(before, after, "generation_tokens_total"),
            kv_pool_tokens=_peak(all_ok, "kv_pool_tokens"),
        ))
    return out


class TimingCrossCheck(Frozen):
    """Client-measured decode rate against llama.cpp's own `timings`, per scenario."""

    scenario: str
    concurrency: int
    requests: int  # requests carrying both client chunks and server timings
    client_decode_tok_s: float | None  # median
    server_decode_tok_s: float | None  # median of (predicted_n - 1) / predicted_ms
    ratio: float | None  # median of per-request client / server
    ttft_minus_prompt_s: float | None  # median client TTFT - server prompt_ms: HTTP, queueing, client
    agrees: bool | None  # |ratio - 1| <= TIMING_AGREEMENT_TOLERANCE


def cross_check_timings(requests: Iterable[tuple[str, int, StreamResult]]) -> list[TimingCrossCheck]:
    """(scenario, concurrency, result) triples -> one check per (scenario, concurrency).

    llama.cpp's `predicted_ms` covers the tokens after the first (its predicted_per_token_ms is
    predicted_ms / (predicted_n - 1)), which is exactly what the client's decode rate covers.
    """
    groups: dict[tuple[str, int], list[tuple[float, float, float | None]]] = {}
    order: list[tuple[str, int]] = []
    for scenario, conc, res in requests:
        key = (scenario, conc)
        if key not in groups:
            groups[key] = []
            order.append(key)
        t = res.timings or {}
        n, ms = t.get("predicted_n"), t.get("predicted_ms")
        if not res.ok or not isinstance(n, int) or not isinstance(ms, int | float) or n < 2 or ms <= 0:
            continue
        timing = request_timing(res)
        if timing.decode_tok_s is None:
            continue
        server = (n - 1) / (ms / 1000.0)
        prompt_ms = t.get("prompt_ms")
        gap = (timing.first_chunk_s - prompt_ms / 1000.0
               if timing.first_chunk_s is not None and isinstance(prompt_ms, int | float) else None)
        groups[key].append((timing.decode_tok_s, server, gap))
    out: list[TimingCrossCheck] = []
    for key in order:
        rows = groups[key]
        if not rows:
            out.append(TimingCrossCheck(scenario=key[0], concurrency=key[1], requests=0, client_decode_tok_s=None,
                                        server_decode_tok_s=None, ratio=None, ttft_minus_prompt_s=None, agrees=None))
            continue
        ratio = statistics.median(c / s for c, s, _ in rows)
        gaps = [g for _, _, g in rows if g is not None]
        out.append(TimingCrossCheck(
            scenario=key[0], concurrency=key[1], requests=len(rows),
            client_decode_tok_s=statistics.median(c for c, _, _ in rows),
            server_decode_tok_s=statistics.median(s for _, s, _ in rows), ratio=ratio,
            ttft_minus_prompt_s=statistics.median(gaps) if gaps else None,
            agrees=abs(ratio - 1.0) <= TIMING_AGREEMENT_TOLERANCE,
        ))
    return out
