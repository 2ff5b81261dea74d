"""Per-request results in the shape `vllm bench serve --save-result --save-detailed` writes.

Read from vLLM's `vllm/benchmarks/serve.py` at commit 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1
(vllm-project/vllm main, late 2026): for generation benchmarks the result JSON holds the per-request
columns `input_lens`, `output_lens`, `ttfts`, `itls`, `latencies`, `start_times`, `queue_times`,
`generated_texts`, `errors` (seconds; `itls` a list per request), next to summary keys such as
`completed`, `failed`, `total_input_tokens`, `total_output_tokens`, `duration`, and
`mean/median/std/p99_{ttft,tpot,itl,e2el}_ms` (p90 and p95 too, as vLLM writes them with
`--metric-percentiles 90,95,99`).

Two semantics (docs/metrics.md has the full comparison):
- "rigbench" (default): rigbench's definitions: TTFT to the first generating chunk (None when
  chunks carry several tokens), ITL per token (multi-token chunks split, coalesced reads merged).
- "vllm": what vLLM's own client would have recorded from the same stream: TTFT to the first
  event with `choices` (a role-only event counts), ITL as raw gaps between events, one per chunk.
  rigbench does not stamp empty events after the first, so a gap ending in one (the finish
  event) is not reproduced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any, Literal

import numpy as np

from rigbench.analysis import request_timing
from rigbench.records import LoadRequest, SpeedRequest

__all__ = ["VLLM_DETAILED_COLUMNS", "vllm_detailed_result", "vllm_request_rows"]

Semantics = Literal["rigbench", "vllm"]

# column (result JSON key) -> per-request row key
VLLM_DETAILED_COLUMNS = {
    "input_lens": "input_len",
    "output_lens": "output_len",
    "ttfts": "ttft",
    "itls": "itl",
    "latencies": "latency",
    "start_times": "start_time",
    "queue_times": "queue_time",
    "generated_texts": "generated_text",
    "errors": "error",
}


def vllm_request_rows(
    records: Iterable[SpeedRequest | LoadRequest], *, semantics: Semantics = "rigbench", include_warmup: bool = False
) -> list[dict[str, Any]]:
    """One dict per request with vLLM's per-request fields (singular names), plus `success` and
    rigbench's `unit_id` so a row can be traced back to its record. Speed requests (warm-up left out unless
    asked for) or one load window's requests (TTFT and ITL from the send, as vLLM's client times them; its
    `queue_time` is the client's wait past the intended start)."""
    recs = [r for r in records if include_warmup or not getattr(r, "warmup", False)]
    t0 = min((r.result.sent_ns for r in recs), default=0)
    rows = []
    for rec in recs:
        res = rec.result
        t = request_timing(res, output_tokens_target=rec.output_tokens_target)
        if semantics == "vllm":
            first = (
                res.first_event_ns
                if res.first_event_ns is not None
                else (res.chunk_ns[0] if res.chunk_ns else None)
            )
            ttft = (first - res.sent_ns) / 1e9 if first is not None else 0.0
            stamps = (
                [first, *res.chunk_ns]
                if first is not None and res.chunk_ns and first < res.chunk_ns[0]
                else list(res.chunk_ns)
            )
            itl = [(b - a) / 1e9 for a, b in pairwise(stamps)]
        else:
            ttft = t.ttft_s if t.ttft_s is not None else 0.0  # vLLM writes 0.0 for "no TTFT"
            itl = list(t.itl_s)
        prompt = (
            res.prompt_tokens
            if res.prompt_tokens is not None
            else (
                rec.input_tokens_measured
                if rec.input_tokens_measured is not None
                else rec.input_tokens_target
            )
        )
        rows.append(
            {
                "unit_id": rec.unit_id,
                "success": res.ok,
                "input_len": prompt,
                "output_len": t.output_tokens if res.ok else 0,
                "ttft": ttft,
                "itl": itl,
                "latency": t.e2e_latency_s if t.e2e_latency_s is not None else 0.0,
                "start_time": (res.sent_ns - t0) / 1e9,
                "queue_time": ((res.sent_ns - res.scheduled_ns) / 1e9)
                if res.scheduled_ns is not None
                else 0.0,
                "generated_text": res.content,
                "error": "" if res.ok else (res.error.message if res.error else f"HTTP {res.http_status}"),
                "ttft_not_comparable": t.ttft_not_comparable if semantics == "rigbench" else None,
            }
        )
    return rows


def _stats(name: str, xs: list[float]) -> dict[str, float]:
    """vLLM's summary keys of one metric: mean, median, std, and the percentiles of its
    `--metric-percentiles 90,95,99` (the keys vLLM writes when asked for them)."""
    keys = [f"{k}_{name}_ms" for k in ("mean", "median", "std", "p90", "p95", "p99")]
    if not xs:
        return dict.fromkeys(keys, 0.0)
    a = np.asarray(xs) * 1000.0
    values = [a.mean(), np.median(a), a.std(), *np.percentile(a, [90, 95, 99])]
    return {k: float(v) for k, v in zip(keys, values, strict=True)}


def vllm_detailed_result(
    records: Iterable[SpeedRequest | LoadRequest], *, semantics: Semantics = "rigbench", include_warmup: bool = False,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The result JSON `vllm bench serve --save-result --save-detailed` would write for these requests.

    Summary statistics follow vLLM: over successful requests; TPOT = (latency - ttft) /
    (output_len - 1) for requests with more than one output token; ITL pooled over requests.
    `settings`: keys of the benchmark's own settings vLLM writes beside them (`request_rate`, `burstiness`,
    `max_concurrency`) and rigbench's (`rigbench_*`: which run kind and window the file holds).
    """
    rows = vllm_request_rows(records, semantics=semantics, include_warmup=include_warmup)
    ok = [r for r in rows if r["success"]]
    ends = [r["start_time"] + r["latency"] for r in rows]
    duration = max(ends) if ends else 0.0
    out_tokens = sum(r["output_len"] for r in ok)
    in_tokens = sum(r["input_len"] for r in ok)
    ttfts = [r["ttft"] for r in ok if r["ttft"]]
    tpots = [
        (r["latency"] - r["ttft"]) / (r["output_len"] - 1) for r in ok if r["output_len"] > 1 and r["ttft"]
    ]
    itls = [x for r in ok for x in r["itl"]]
    result: dict[str, Any] = {
        "rigbench_semantics": semantics,
        **(settings or {}),
        "duration": duration,
        "completed": len(ok),
        "failed": len(rows) - len(ok),
        "total_input_tokens": in_tokens,
        "total_output_tokens": out_tokens,
        "request_throughput": len(ok) / duration if duration > 0 else 0.0,
        "output_throughput": out_tokens / duration if duration > 0 else 0.0,
        "total_token_throughput": (in_tokens + out_tokens) / duration if duration > 0 else 0.0,
    }
    for col, key in VLLM_DETAILED_COLUMNS.items():
        result[col] = [r[key] for r in rows]
    result.update(_stats("ttft", ttfts))
    result.update(_stats("tpot", tpots))
    result.update(_stats("itl", itls))
    result.update(_stats("e2el", [r["latency"] for r in ok]))
    return result
