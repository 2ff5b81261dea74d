"""Speed metrics, derived from the speed suite's raw records (definitions: docs/metrics.md)."""

from __future__ import annotations

from collections import defaultdict
from typing import Literal

from pydantic import Field

from rigbench.analysis import _metrics as m
from rigbench.analysis._arrival import ArrivalSummary, stream_arrival, summarize_arrival
from rigbench.analysis._reasoning import split_tokens
from rigbench.analysis._stats import Stat, describe
from rigbench.analysis._timing import RequestTiming, request_timing
from rigbench.records import Frozen, SpeedBatch, SpeedRequest, SpeedSkip, StreamResult
from rigbench.store import RunReader

__all__ = ["ScenarioSpeed", "SpeedSummary", "TokenProvenance", "latency_finding", "summarize_speed", "token_provenance"]

# Below this fraction of the asked output, a scenario "fell short" and says so.
SHORT_OUTPUT_ATTAINMENT = 0.98


class ScenarioSpeed(Frozen):
    scenario: str
    concurrency: int
    input_tokens_target: int
    output_tokens_target: int
    input_tokens_measured: int | None  # rendered prompt, measured with the server's tokenizer
    prompt_tokens_reported: int | None  # what the server's usage said (median)
    input_mismatches: int  # requests whose reported prompt tokens differ from the target
    requests: int  # measured (non-warm-up) requests, failed included
    failed: int
    error_kinds: dict[str, int] = Field(default_factory=dict)
    attainment_min: float | None  # min over requests of output tokens received / asked
    e2e_tok_s: Stat | None
    decode_tok_s: Stat | None
    ttft_s: Stat | None
    ttft_not_comparable: str | None  # why TTFT is withheld (multi-token chunks), else None
    # Headline ITL: each request's mean ITL (decode time / tokens after the first arrival's), over requests.
    itl_mean_s: Stat | None
    itl_gaps_s: Stat | None  # second view: every per-token gap of every request, pooled (n = gaps)
    e2e_latency_s: Stat | None  # per request: request sent -> end of stream
    aggregate_tok_s: Stat | None  # per batch: all output tokens / batch wall time
    tokens_per_chunk: float | None
    prefill_share: float | None  # median TTFT / median request wall time
    # Fewest requests in flight at once at the peak of a batch (measured from send/done stamps):
    # below `concurrency`, the asked level was not reached and a warning says so.
    concurrency_reached: int | None = None
    # How the streams arrived (analysis/_arrival.py). When buffered by the server or a proxy, TTFT,
    # ITL and decode tok/s are withheld (None) and `latency_not_measurable` says why.
    arrival: ArrivalSummary | None = None
    latency_not_measurable: str | None = None

    provenance: TokenProvenance | None = None  # where the token counts behind this row came from


# Engines that report usage.completion_tokens on a stream when asked (rigbench always asks).


class TokenProvenance(Frozen):
    """Where one row's token counts came from (docs/metrics.md, "Provenance of every figure").

    - output tokens: the server's `usage`, llama.cpp's `timings.predicted_n`, or estimated from the
      number of streamed chunks (a count of requests per source);
    - tokens per chunk: exact (every chunk carried one token, the counts add up) or inferred
      (the total shared out over chunks in proportion to their characters);
    - reasoning/answer split: measured (server usage details, or one token per chunk counted by
      kind), estimated (by characters), or none (no reasoning in the outputs).
    """

    output_tokens: dict[str, int]  # "usage" | "timings" | "estimated" -> requests
    chunk_tokens: Literal["exact", "inferred", "none"]
    reasoning_split: Literal["measured", "estimated", "none"]
    flag: str | None = None  # an estimate where the engine could have given an exact count

    @property
    def label(self) -> str:
        """Short form for a table cell: "usage", "timings", "est." (+ "~chunk" when per-chunk counts
        are inferred, "~reasoning" when the split is estimated, "!" when flagged)."""
        parts = ["+".join(("est." if k == "estimated" else k) for k in sorted(self.output_tokens))]
        if self.chunk_tokens == "inferred":
            parts.append("~chunk")
        if self.reasoning_split == "estimated":
            parts.append("~reasoning")
        return ", ".join(parts) + ("!" if self.flag else "")


def token_provenance(results: list[tuple[StreamResult, RequestTiming]], engine: str | None,
                     reports_usage: bool | None = None) -> TokenProvenance:
    sources: dict[str, int] = defaultdict(int)
    for _, t in results:
        sources["estimated" if t.output_tokens_source == "chunks" else t.output_tokens_source] += 1
    chunk = "none" if not results else (
        "inferred" if any(t.chunk_tokens_source == "by_chars" for _, t in results) else "exact")
    methods = {split_tokens(r).method for r, _ in results}
    reasoning: Literal["measured", "estimated", "none"] = (
        "estimated" if methods & {"chars", "none"} and any(r.reasoning for r, _ in results)
        else "measured" if methods & {"usage_details", "chunks"} else "none")
    flag = None
    if sources.get("estimated") and reports_usage:  # the fingerprint's: the engine sends usage when asked
        flag = (f"output tokens of {sources['estimated']} of {len(results)} requests were estimated from the "
                f"chunk count, though {engine} reports usage.completion_tokens when asked: the server left it "
                "out, so these tok/s figures rest on an estimate")
    return TokenProvenance(output_tokens=dict(sources), chunk_tokens=chunk, reasoning_split=reasoning, flag=flag)


class SpeedSummary(Frozen):
    rows: list[ScenarioSpeed]
    skipped: dict[str, str]  # scenario -> reason
    warnings: list[str]


def summarize_speed(reader: RunReader) -> SpeedSummary | None:
    batches = {b.unit_id: b for b in reader.records("speed_batch", SpeedBatch)}
    skipped = {s.scenario: s.reason for s in reader.records("speed_skip", SpeedSkip)}
    if not batches and not skipped:
        return None
    # Keep the last write of each request, and only requests of batches that completed: a batch
    # cut short by a kill is redone on resume, and its partial requests must not count twice.
    reqs: dict[str, SpeedRequest] = {}
    for r in reader.records("speed_request", SpeedRequest):
        reqs[r.unit_id] = r
    groups: dict[tuple[str, int], list[tuple[SpeedRequest, RequestTiming]]] = defaultdict(list)
    order: list[tuple[str, int]] = []
    for r in reqs.values():
        if r.warmup or r.unit_id.rsplit("/", 1)[0] not in batches:
            continue
        key = (r.scenario, r.concurrency)
        if key not in groups:
            order.append(key)
        groups[key].append((r, request_timing(r.result, output_tokens_target=r.output_tokens_target)))
    rows: list[ScenarioSpeed] = []
    warnings: list[str] = []
    fp = reader.header.fingerprint
    engine_name = fp.engine if fp is not None else None
    # recorded since issue 24; an older run does not say, and is not flagged
    reports_usage = fp.reports_usage if fp is not None else None
    for key in order:
        row = _row(key, groups[key], [b for b in batches.values()
                                      if (b.scenario, b.concurrency) == key and not b.warmup], warnings)
        prov = token_provenance([(r.result, t) for r, t in groups[key] if r.result.ok],
                                engine_name, reports_usage)
        if prov.flag:
            warnings.append(f"{key[0]} (c={key[1]}): {prov.flag}")
        rows.append(row.model_copy(update={"provenance": prov}))
    return SpeedSummary(rows=rows, skipped=skipped, warnings=warnings)


def _row(key: tuple[str, int], items: list[tuple[SpeedRequest, RequestTiming]], batches: list[SpeedBatch],
         warnings: list[str]) -> ScenarioSpeed:
    scenario, conc = key
    first = items[0][0]
    ok = [(r, t) for r, t in items if r.result.ok]
    errors: dict[str, int] = defaultdict(int)
    for r, _ in items:
        if not r.result.ok:
            errors[r.result.error.kind if r.result.error else f"http_{r.result.http_status}"] += 1
    patterns = [stream_arrival(r.result) for r, _ in ok]
    arrival = summarize_arrival(patterns)
    not_measurable = _arrival_warning(scenario, conc, arrival, warnings)
    # Latency comes only from streams that arrived as generated: none when the row was buffered,
    # the others when a few requests were.
    timings = [] if not_measurable else [t for (_, t), p in zip(ok, patterns, strict=True) if not p.buffered]
    multi = [t for t in timings if t.multi_token_chunks]
    ttft_note = None
    if multi:
        ttft_note = (f"{len(multi)} of {len(timings)} requests streamed chunks carrying more than one token "
                     "(e.g. speculative decoding): the first chunk is not the first token, so TTFT is withheld")
    # aggregate tok/s per batch: output tokens of its requests / batch wall time
    by_batch: dict[str, int] = defaultdict(int)
    for r, t in ok:
        by_batch[r.unit_id.rsplit("/", 1)[0]] += t.output_tokens
    # a batch whose wall time holds a retry wait (--retry-on) measured the server's refusal, not its speed
    retried = {r.unit_id.rsplit("/", 1)[0] for r, _ in items if r.result.retries}
    agg = [m.aggregate_tok_s(by_batch[b.unit_id], b.started_ns, b.ended_ns) for b in batches
           if b.ended_ns > b.started_ns and b.unit_id in by_batch and b.unit_id not in retried]
    if retried:
        warnings.append(f"{scenario} (c={conc}): {len(retried)} batch(es) had a request the server turned away "
                        "and rigbench retried (--retry-on): their aggregate tok/s is left out (its wall time holds "
                        "the wait); TTFT, ITL and e2e come from the attempt that was answered")
    every = [t for _, t in ok]  # throughput and end-to-end figures hold whatever the arrival pattern
    attain = [t.attainment for t in every if t.attainment is not None]
    attainment_min = min(attain) if attain else None
    if attainment_min is not None and attainment_min < SHORT_OUTPUT_ATTAINMENT:
        warnings.append(f"{scenario} (c={conc}): output fell short of the {first.output_tokens_target} tokens "
                        f"asked (lowest {attainment_min:.0%}); the engine may not honour forced length")
    reported = [r.result.prompt_tokens for r, _ in ok if r.result.prompt_tokens is not None]
    mismatches = sum(1 for p in reported if p != first.input_tokens_target)
    if mismatches:
        warnings.append(f"{scenario} (c={conc}): {mismatches} request(s) reported a prompt length other than "
                        f"the {first.input_tokens_target} tokens targeted")
    if ok and not reported and all(r.input_tokens_measured is None for r, _ in ok):
        warnings.append(f"{scenario} (c={conc}): input lengths not measured: the server reports no prompt token "
                        "count and has no tokenizer rigbench can use, so prompts were sized at about 4 characters per "
                        f"token for the {first.input_tokens_target} tokens asked; treat input lengths as approximate")
    if errors:
        warnings.append(f"{scenario} (c={conc}): {sum(errors.values())} of {len(items)} requests failed "
                        f"({', '.join(f'{k}: {v}' for k, v in errors.items())})")
    measured = [r.input_tokens_measured for r, _ in items if r.input_tokens_measured is not None]
    ttft = describe([t.ttft_s for t in timings if t.ttft_s is not None]) if not multi else None
    wall = describe([t.wall_s for t in every if t.wall_s is not None])
    prefill_share = None
    ttft_any = describe([t.first_chunk_s for t in timings if t.first_chunk_s is not None])
    if ttft_any and wall:
        prefill_share = m.prefill_share(ttft_any.median, wall.median)
    tpc = [t.tokens_per_chunk for t in every if t.tokens_per_chunk is not None]
    reached = _concurrency_reached([r for r, _ in items])
    if reached is not None and reached < conc:
        warnings.append(f"{scenario} (c={conc}): concurrency actually reached: {reached} (at most {reached} "
                        f"requests were in flight at once in some batch); figures are for that level, not {conc}")
    return ScenarioSpeed(
        scenario=scenario, concurrency=conc,
        input_tokens_target=first.input_tokens_target, output_tokens_target=first.output_tokens_target,
        input_tokens_measured=int(sorted(measured)[len(measured) // 2]) if measured else None,
        prompt_tokens_reported=int(sorted(reported)[len(reported) // 2]) if reported else None,
        input_mismatches=mismatches, requests=len(items), failed=len(items) - len(ok), error_kinds=dict(errors),
        attainment_min=attainment_min,
        e2e_tok_s=describe([t.e2e_tok_s for t in every if t.e2e_tok_s is not None]),
        decode_tok_s=describe([t.decode_tok_s for t in timings if t.decode_tok_s is not None]),
        ttft_s=ttft, ttft_not_comparable=ttft_note, **_latency(timings),
        e2e_latency_s=describe([t.e2e_latency_s for t in every if t.e2e_latency_s is not None]),
        aggregate_tok_s=describe(agg), tokens_per_chunk=sum(tpc) / len(tpc) if tpc else None,
        prefill_share=prefill_share, concurrency_reached=reached, arrival=arrival,
        latency_not_measurable=not_measurable,
    )


def latency_finding(scenario: str, concurrency: int, arrival: ArrivalSummary) -> str | None:
    """The finding that untrusts a run's latency (the runner) and that reports show (the same words)."""
    if not arrival.buffered or arrival.finding is None:
        return None
    return f"latency figures: {scenario} (c={concurrency}) {arrival.finding}; TTFT and ITL not measurable"


def _arrival_warning(scenario: str, conc: int, arrival: ArrivalSummary, warnings: list[str]) -> str | None:
    """The reason a row's latency is withheld (None: it is measured), and its warning."""
    finding = latency_finding(scenario, conc, arrival)
    if finding is not None:
        warnings.append(finding)
        return arrival.finding
    if arrival.finding is not None:  # a minority of requests: left out of the latency figures
        warnings.append(f"{scenario} (c={conc}): {arrival.finding}; their TTFT and ITL are left out, the other "
                        f"{arrival.requests - arrival.held} requests are measured")
    return None


def _latency(timings: list[RequestTiming]) -> dict[str, Stat | None]:
    """ITL per request (headline) and per-token gaps pooled (second view)."""
    return {
        "itl_mean_s": describe([t.itl_mean_s for t in timings if t.itl_mean_s is not None]),
        "itl_gaps_s": describe([g for t in timings for g in t.itl_s]),
    }


def _concurrency_reached(requests: list[SpeedRequest]) -> int | None:
    """Min over batches of the peak number of requests between their send and their end."""
    spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in requests:
        if r.result.sent_ns and r.result.done_ns:
            spans[r.unit_id.rsplit("/", 1)[0]].append((r.result.sent_ns, r.result.done_ns))
    peaks = []
    for batch in spans.values():
        events = sorted([(a, 1) for a, _ in batch] + [(b, -1) for _, b in batch], key=lambda e: (e[0], e[1]))
        level = peak = 0
        for _, step in events:
            level += step
            peak = max(peak, level)
        peaks.append(peak)
    return min(peaks) if peaks else None
