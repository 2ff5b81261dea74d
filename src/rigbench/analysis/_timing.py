"""Per-request timing, derived from one StreamResult exactly as docs/metrics.md defines it: this module reduces the
stamps to arrivals and tokens (below); each figure is then the metric of that name in analysis/_metrics.py.

Used by analysis/_speed.py (keep these field names: they are the speed report's vocabulary).

- arrival of a chunk: the kernel's receive stamp of the socket read that delivered it
  (`StreamResult.chunk_kernel_ns`, SO_TIMESTAMPNS) where the client recorded one, else rigbench's
  own stamp of that read (`chunk_ns`); `arrival_source` says which. Every metric below uses it.
- TTFT: request sent -> first chunk carrying generated text (content, reasoning or a tool call).
  Withheld (None, with the reason in `ttft_not_comparable`) when chunks carry more than one token.
- tokens per chunk: output tokens (server usage, else timings, else chunk count) / generating chunks.
  Per chunk: exact counts when the caller passes them, else 1 each when they add up, else the
  output tokens are shared out in proportion to each chunk's characters.
- arrivals: chunks with the same stamp came in one socket read; they form one arrival carrying the
  sum of their tokens, so a coalesced read never produces a 0 s gap.
- decode tok/s: (output tokens - first arrival's tokens) / (last chunk - first chunk).
- end-to-end tok/s: output tokens / (last chunk - request sent).
- ITL, per request (the headline): (last chunk - first chunk) / (output tokens - first arrival's
  tokens) = 1 / decode tok/s. Reports summarise it over requests (median, p90, p99, n).
- ITL, per token (the pooled view): each arrival's gap to the previous arrival divided evenly over
  its tokens; reports pool these gaps over requests as a second, labelled distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from rigbench.analysis import _metrics as m
from rigbench.analysis._metrics import Stream
from rigbench.records import Frozen, StreamResult

__all__ = ["MULTI_TOKEN_CHUNK_THRESHOLD", "ArrivalSource", "RequestTiming", "arrival_ns", "chunk_token_counts",
           "request_timing"]

# Above this mean, chunks carry several tokens (speculative decoding on vLLM/SGLang, batching
# proxies): the first chunk is then not the first token. A little above 1.0 so that one token
# split over two chunks (a multi-byte character) does not trip it.
MULTI_TOKEN_CHUNK_THRESHOLD = 1.05

ChunkTokensSource = Literal["exact", "one_each", "by_chars", "none"]
ArrivalSource = Literal["kernel", "user"]


def arrival_ns(res: StreamResult) -> tuple[list[int], ArrivalSource]:
    """Each chunk's arrival: the kernel's stamp of its read where recorded, else rigbench's own."""
    k = res.chunk_kernel_ns
    if k and len(k) == len(res.chunk_ns):
        return list(k), "kernel"
    return list(res.chunk_ns), "user"


class RequestTiming(Frozen):
    """Timing of one request. Seconds since the request was sent unless the name says otherwise."""

    output_tokens: int
    output_tokens_source: str  # "usage" | "timings" | "chunks"
    arrival_source: ArrivalSource = "user"  # the clock of every stamp below (module docstring)
    chunks: int  # generating chunks
    arrivals: int  # distinct read stamps among them
    coalesced_chunks: int  # chunks that arrived in the same read as the chunk before them
    tokens_per_chunk: float | None  # output tokens / chunks
    tokens_per_chunk_max: int | None
    chunk_tokens_source: ChunkTokensSource
    multi_token_chunks: bool
    ttft_s: float | None  # first generating chunk; None when not comparable
    ttft_not_comparable: str | None  # why ttft_s is withheld
    first_chunk_s: float | None  # first generating chunk, always (what TTFT would be)
    ttft_content_s: float | None  # first chunk with answer content (after any reasoning)
    first_event_s: float | None  # first SSE event of any kind, role-only included (vLLM's TTFT)
    wall_s: float | None  # request sent -> last generating chunk
    e2e_latency_s: float | None  # request sent -> end of the stream (vLLM's E2EL)
    e2e_tok_s: float | None
    decode_tok_s: float | None
    itl_mean_s: float | None  # per-request mean ITL = 1 / decode_tok_s (the headline ITL; vLLM's TPOT)
    itl_s: list[float] = Field(default_factory=list)  # per-token gaps, one per token after the first arrival's
    attainment: float | None  # output tokens / asked


def chunk_token_counts(
    res: StreamResult, output_tokens: int, exact: Sequence[int] | None = None
) -> tuple[list[int], ChunkTokensSource]:
    """Tokens carried by each generating chunk, and how that was known."""
    n = len(res.chunk_ns)
    if n == 0:
        return [], "none"
    if exact is not None:
        if len(exact) != n:
            raise ValueError(f"chunk token counts: got {len(exact)} for {n} chunks")
        return [int(k) for k in exact], "exact"
    if output_tokens <= n:
        return [1] * n, "one_each"
    # Share the tokens out in proportion to characters (at least one per chunk), then settle the
    # rounding by largest remainder.
    chars = list(res.chunk_chars) if len(res.chunk_chars) == n else [0] * n
    known = [c for c in chars if c > 0]
    fill = (sum(known) / len(known)) if known else 1.0  # tool-call chunks carry no counted chars
    weights = [c if c > 0 else fill for c in chars]
    total_w = sum(weights)
    shares = [output_tokens * w / total_w for w in weights]
    counts = [max(1, int(s)) for s in shares]
    diff = output_tokens - sum(counts)
    by_rest = sorted(range(n), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    for i in by_rest:
        if diff == 0:
            break
        if diff > 0:
            counts[i] += 1
            diff -= 1
    for i in reversed(by_rest):
        if diff == 0:
            break
        if counts[i] > 1:
            counts[i] -= 1
            diff += 1
    return counts, "by_chars"


def request_timing(
    res: StreamResult,
    *,
    output_tokens_target: int | None = None,
    chunk_tokens: Sequence[int] | None = None,
) -> RequestTiming:
    """Derive one request's timing. `chunk_tokens`: exact tokens per chunk, when known (e.g. from
    the server's /tokenize on each chunk's text); otherwise they are inferred (see module doc)."""
    n_chunks = len(res.chunk_ns)
    if res.completion_tokens is not None:
        out = res.completion_tokens
        source = "usage" if res.usage and "completion_tokens" in res.usage else "timings"
    elif chunk_tokens is not None:
        out, source = sum(chunk_tokens), "chunks"
    else:
        out, source = n_chunks, "chunks"
    counts, counts_source = chunk_token_counts(res, out, chunk_tokens)
    tpc = out / n_chunks if n_chunks else None
    multi = tpc is not None and tpc > MULTI_TOKEN_CHUNK_THRESHOLD
    if counts_source == "exact" and counts and counts[0] > 1:
        multi = True
    # Arrivals: merge chunks read together (same stamp) into one.
    arrived, arrival_source = arrival_ns(res)
    stamps: list[int] = []
    tokens: list[int] = []
    for t, k in zip(arrived, counts, strict=True):
        if stamps and t == stamps[-1]:
            tokens[-1] += k
        else:
            stamps.append(t)
            tokens.append(k)
    reason = None
    if stamps and multi:
        reason = (
            f"chunks carry {tpc:.2f} tokens on average (speculative decoding?): the first chunk "
            "arrives after more than one token was generated, so it is not time to first token"
        )
    content_ns = None
    if res.first_content_ns is not None:
        # the arrival of the read whose own stamp is first_content_ns
        at = res.chunk_ns.index(res.first_content_ns) if res.first_content_ns in res.chunk_ns else None
        content_ns = arrived[at] if at is not None else res.first_content_ns
    else:  # records written before first_content_ns existed
        content_ns = next((arrived[i] for i, kind in enumerate(res.chunk_kind) if kind == "c"), None)
    first_event_ns = res.first_event_kernel_ns if arrival_source == "kernel" else None
    s = Stream(sent_ns=res.sent_ns, done_ns=res.done_ns, arrivals_ns=stamps, arrival_tokens=tokens, output_tokens=out,
               multi_token_chunks=multi, content_ns=content_ns, first_event_ns=first_event_ns or res.first_event_ns,
               output_tokens_target=output_tokens_target)
    return RequestTiming(
        output_tokens=out,
        output_tokens_source=source,
        arrival_source=arrival_source,
        chunks=n_chunks,
        arrivals=len(stamps),
        coalesced_chunks=n_chunks - len(stamps),
        tokens_per_chunk=tpc,
        tokens_per_chunk_max=max(counts) if counts else None,
        chunk_tokens_source=counts_source,
        multi_token_chunks=multi,
        ttft_s=m.ttft_s(s),
        ttft_not_comparable=reason,
        first_chunk_s=m.first_chunk_s(s),
        ttft_content_s=m.ttft_content_s(s),
        first_event_s=m.first_event_s(s),
        wall_s=m.wall_s(s),
        e2e_latency_s=m.e2e_latency_s(s),
        e2e_tok_s=m.e2e_tok_s(s),
        decode_tok_s=m.decode_tok_s(s),
        itl_mean_s=m.itl_mean_s(s),
        itl_s=m.itl_s(s),
        attainment=m.attainment(s),
    )
