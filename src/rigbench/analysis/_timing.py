"""Per-request timing metrics, derived from one StreamResult exactly as docs/metrics.md defines them.

Used by analysis/_speed.py (keep these field names: they are the speed report's vocabulary).

- TTFT: request sent -> first chunk carrying generated text (content, reasoning or a tool call).
- tokens per chunk: output tokens (server usage, else timings, else chunk count) / generating chunks.
- decode tok/s: (output tokens - first chunk's tokens) / (last chunk - first chunk).
- end-to-end tok/s: output tokens / (last chunk - request sent).
- ITL: per-token inter-token latency: each chunk gap divided over the tokens of the later chunk.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rigbench.client import StreamResult

__all__ = ["RequestTiming", "request_timing"]

# Above this mean, chunks carry several tokens (speculative decoding on vLLM/SGLang, batching
# proxies): the first chunk is then not the first token.
MULTI_TOKEN_CHUNK_THRESHOLD = 1.05


class RequestTiming(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    output_tokens: int
    output_tokens_source: str  # "usage" | "timings" | "chunks"
    chunks: int
    tokens_per_chunk: float | None
    multi_token_chunks: bool
    ttft_s: float | None  # first generating chunk
    ttft_content_s: float | None  # first chunk with answer content (after any reasoning)
    first_event_s: float | None  # first SSE event of any kind (what some tools call TTFT)
    wall_s: float | None  # request sent -> last chunk
    e2e_tok_s: float | None
    decode_tok_s: float | None
    itl_s: list[float] = Field(default_factory=list)
    attainment: float | None  # output tokens / asked


def request_timing(res: StreamResult, *, output_tokens_target: int | None = None) -> RequestTiming:
    n_chunks = len(res.chunk_ns)
    if res.completion_tokens is not None:
        out = res.completion_tokens
        source = "usage" if res.usage and "completion_tokens" in res.usage else "timings"
    else:
        out, source = n_chunks, "chunks"
    tpc = out / n_chunks if n_chunks else None
    multi = tpc is not None and tpc > MULTI_TOKEN_CHUNK_THRESHOLD
    ttft = ttft_content = first_event = wall = e2e = decode = None
    itl: list[float] = []
    if n_chunks:
        t0 = res.chunk_ns[0]
        ttft = (t0 - res.sent_ns) / 1e9
        wall = (res.chunk_ns[-1] - res.sent_ns) / 1e9
        e2e = out / wall if wall > 0 else None
        per_chunk = tpc or 1.0
        first_tokens = per_chunk if multi else 1.0
        span = (res.chunk_ns[-1] - t0) / 1e9
        if n_chunks > 1 and span > 0:
            decode = (out - first_tokens) / span
        prev = t0
        for t in res.chunk_ns[1:]:
            gap = (t - prev) / 1e9
            if multi:
                itl.extend([gap / per_chunk] * max(1, round(per_chunk)))
            else:
                itl.append(gap)
            prev = t
        for i, k in enumerate(res.chunk_kind):
            if k in ("c", "m"):
                ttft_content = (res.chunk_ns[i] - res.sent_ns) / 1e9
                break
    if res.first_event_ns is not None:
        first_event = (res.first_event_ns - res.sent_ns) / 1e9
    return RequestTiming(
        output_tokens=out, output_tokens_source=source, chunks=n_chunks, tokens_per_chunk=tpc,
        multi_token_chunks=multi, ttft_s=ttft, ttft_content_s=ttft_content, first_event_s=first_event,
        wall_s=wall, e2e_tok_s=e2e, decode_tok_s=decode, itl_s=itl,
        attainment=(out / output_tokens_target) if output_tokens_target else None,
    )
