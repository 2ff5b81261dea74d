"""Prefix-cache hits on the measured prompts: TTFT of a prompt the server had cached measures a
cache lookup, not a prefill.

rigbench's speed prompts open with a per-run nonce and a per-request tag, so two prompts of a run
share at most their rendered opening (chat template, `[request <nonce>-`, a few digits of the tag);
each request records the most it can share (`SpeedRequest.input_tokens_shared_max`: the rendered
prompt without its filler). Any cached token beyond that is prefill the server skipped: a server
caching across differing prompts, a caching proxy, a previous run's prompts replayed.

Where the figures come from, all server-reported (docs/honesty.md has the thresholds and why):
  per request  llama.cpp `timings.cache_n` (+ `prompt_n` prefilled), else the OpenAI usage field
               `usage.prompt_tokens_details.cached_tokens` (vLLM with --enable-prompt-tokens-details,
               SGLang, llama.cpp)
  per level    the prefix-cache counters in /metrics, last scrape before to first after the
               scenario's concurrency level (warm-up included): vLLM V1 `vllm:prefix_cache_hits` /
               `vllm:prefix_cache_queries` (`_total` on the wire; `vllm:gpu_prefix_cache_*` before the
               rename), SGLang `sglang:cached_tokens_total` / `sglang:prompt_tokens_total`
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from rigbench.records import (
    CacheSource,
    LoadRequest,
    ScenarioPrefixCache,
    SpeedRequest,
    StreamResult,
    TelemetryRecord,
)
from rigbench.rig.engines import known_engines

__all__ = ["PREFIX_CACHE_UNTRUST_SHARE", "PrefixCacheVerdict", "judge_prefix_cache", "load_prefix_cache_use",
           "prefix_cache_use"]

# A scenario whose prompts had this share (or more) of their not-shared-by-design tokens served from
# the cache is untrusted: its mean TTFT then leaves out at least that share of the prefill, more than
# the run-to-run spread of TTFT on a quiet rig (docs/honesty.md). Below it, hits are a warning.
PREFIX_CACHE_UNTRUST_SHARE = 0.10
# Without a recorded bound (a server rigbench cannot count rendered prompts on), at most this share
# of a prompt counts as shared by design. Measured: llama-server reused 24-40 of 128 tokens
# (19-31%) of honest prompts; a cache serving whole prompts reuses all but the last token.
UNKNOWN_SHARED_SHARE = 0.5

_SOURCE_TEXT: dict[str, str] = {
    "timings": "server-reported, llama.cpp timings.cache_n",
    "usage": "server-reported, usage.prompt_tokens_details.cached_tokens",
    "counters": "server-reported, /metrics prefix-cache counters over the scenario (other clients count too)",
}


def remedy() -> str:
    """What to do about prompts the cache already held: each engine that can clear its cache says how."""
    resets = [e.prefix_cache_reset for e in known_engines() if e.prefix_cache_reset]
    clear = f" (or clear its cache: {', '.join(resets)})" if resets else ""
    return (f"Remedy: measure on a server whose cache holds none of these prompts: restart it{clear}, keep other "
            "clients and any caching proxy off it, and do not replay a run's prompts")


class PrefixCacheVerdict(NamedTuple):
    reasons: list[str]  # untrust the run
    warnings: list[str]  # shown; the verdict stands


def _cached(r: StreamResult) -> tuple[int, int, CacheSource] | None:
    """(prompt tokens, of which cached, source) as the server reported them for one request."""
    t = r.timings or {}
    c, n = t.get("cache_n"), t.get("prompt_n")
    if isinstance(c, int) and isinstance(n, int):
        return c + n, c, "timings"  # llama.cpp: prompt_n counts only the tokens it prefilled
    u = r.usage or {}
    d = u.get("prompt_tokens_details")
    if isinstance(d, dict) and isinstance(d.get("cached_tokens"), int) and isinstance(u.get("prompt_tokens"), int):
        return int(u["prompt_tokens"]), int(d["cached_tokens"]), "usage"
    return None


def _shared(req: SpeedRequest | LoadRequest, prompt_tokens: int) -> int:
    bound = req.input_tokens_shared_max
    if bound is None:
        bound = int(UNKNOWN_SHARED_SHARE * prompt_tokens)
    return min(bound, prompt_tokens)


def _delta(tel: TelemetryRecord, key: str) -> float | None:
    ok = [s for s in tel.samples if s.error is None]
    before = [s for s in ok if s.phase == "before"]
    after = [s for s in ok if s.phase == "after"]
    if not before or not after or key not in before[-1].values or key not in after[0].values:
        return None
    d = after[0].values[key] - before[-1].values[key]
    return d if d >= 0 else None  # a counter that went down: the server restarted in between


def _from_counters(scenario: str, conc: int, level: Sequence[SpeedRequest],
                   tel: TelemetryRecord) -> ScenarioPrefixCache | None:
    hits = _delta(tel, "prefix_cache_hits_total")
    queries = _delta(tel, "prefix_cache_queries_total")
    if queries is None:  # SGLang counts cached tokens against all prompt tokens
        queries = _delta(tel, "prompt_tokens_total")
    if hits is None or not queries:
        return None
    shared = sum(_shared(r, r.input_tokens_measured or r.input_tokens_target) for r in level)
    return ScenarioPrefixCache(scenario=scenario, concurrency=conc, source="counters", requests=len(level),
                               prompt_tokens=int(queries), cached_tokens=int(hits), shared_tokens=shared,
                               beyond_tokens=max(0, int(hits) - shared))


def _row(scenario: str, conc: int, level: Sequence[SpeedRequest | LoadRequest]) -> ScenarioPrefixCache | None:
    """One level's requests as the server reported their cached tokens (None: none reported)."""
    seen: list[tuple[SpeedRequest | LoadRequest, int, int, CacheSource]] = []
    for r in level:
        got = _cached(r.result) if not getattr(r, "warmup", False) and r.result.ok else None
        if got is not None:
            seen.append((r, *got))
    if not seen:
        return None
    prompt = cached = shared = beyond = hits = 0
    for r, p, c, _ in seen:
        s = _shared(r, p)
        prompt, cached, shared = prompt + p, cached + c, shared + s
        beyond += max(0, c - s)
        hits += c > s
    source = Counter(src for *_, src in seen).most_common(1)[0][0]
    return ScenarioPrefixCache(scenario=scenario, concurrency=conc, source=source, requests=len(seen),
                               prompt_tokens=prompt, cached_tokens=cached, shared_tokens=shared,
                               beyond_tokens=beyond, hit_requests=hits)


def prefix_cache_use(requests: Iterable[SpeedRequest],
                     telemetry: Iterable[TelemetryRecord] = ()) -> list[ScenarioPrefixCache]:
    """Cached prompt tokens per (scenario, concurrency): from each measured request's own report
    where the server gives one, else from the level's /metrics counters. Levels with neither are
    left out."""
    levels: dict[tuple[str, int], list[SpeedRequest]] = {}
    for r in requests:
        levels.setdefault((r.scenario, r.concurrency), []).append(r)
    tel = {(t.scenario, t.concurrency): t for t in telemetry}
    out: list[ScenarioPrefixCache] = []
    for (scenario, conc), level in levels.items():
        row = _row(scenario, conc, level)
        if row is None and (scenario, conc) in tel:
            row = _from_counters(scenario, conc, level, tel[(scenario, conc)])
        if row is not None:
            out.append(row)
    return out


def load_prefix_cache_use(requests: Iterable[LoadRequest]) -> list[ScenarioPrefixCache]:
    """The same per load window (scenario `load <window>`, concurrency 0), from each request's own report.
    A multi-turn session's turn records its history as shared by design (`input_tokens_shared_max`):
    resending it is what sessions are for, and a prefix cache may serve it."""
    windows: dict[str, list[LoadRequest]] = {}
    for r in requests:
        windows.setdefault(r.window, []).append(r)
    rows = [_row(f"load {w}", 0, level) for w, level in windows.items()]
    return [r for r in rows if r is not None]


def _pct(share: float) -> str:
    """Rounded down to 0.1%: a share just under the threshold never prints as the threshold."""
    return f"{math.floor(share * 1000) / 10:g}%"


def _describe(row: ScenarioPrefixCache) -> str:
    which = (f"{row.hit_requests} of {row.requests} requests" if row.hit_requests is not None
             else f"{row.requests} requests, warm-up included")
    level = f"{row.scenario} c={row.concurrency}" if row.concurrency else row.scenario
    return (f"{level}: {_pct(row.beyond_share)} of the prompt tokens not shared by design "
            f"were served from the server's prefix cache ({row.cached_tokens} of {row.prompt_tokens} prompt tokens "
            f"cached, at most {row.shared_tokens} shared by design; {which}; {_SOURCE_TEXT[row.source]}): "
            "TTFT measured a cache hit: prefill time understated")


def judge_prefix_cache(rows: Iterable[ScenarioPrefixCache]) -> PrefixCacheVerdict:
    """A level at or above PREFIX_CACHE_UNTRUST_SHARE untrusts the run; any smaller hit warns."""
    reasons: list[str] = []
    warnings: list[str] = []
    for row in rows:
        if row.beyond_tokens <= 0:
            continue
        if row.beyond_share >= PREFIX_CACHE_UNTRUST_SHARE:
            reasons.append(f"{_describe(row)}. {remedy()}")
        else:
            warnings.append(f"{_describe(row)} (below the {_pct(PREFIX_CACHE_UNTRUST_SHARE)} that untrusts). {remedy()}")
    return PrefixCacheVerdict(reasons, warnings)
