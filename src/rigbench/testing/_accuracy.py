"""Compare what the client measured with what the emulator really did.

Errors are client minus truth, in seconds, on the shared monotonic clock. The client's time of a
chunk is its arrival as the metrics use it (analysis `arrival_ns`: the kernel's receive stamp of
its read where recorded, else rigbench's own stamp).
- TTFT error: the client's first-chunk arrival minus the emulator's first-chunk write. The start
  of TTFT is the client's own `sent_ns`, stamped synchronously just before the kernel write; the
  emulator's `received_ns` is not used as truth because under load the emulator reads requests
  late (as any server does), which is part of TTFT, not an error of the client.
- per-token ITL error: `request_timing` on the client's result versus the same definition on the
  true chunk write times and true tokens per chunk, token by token (aligned on the last token).
- token counts must match exactly: output tokens, chunks, and tokens per chunk as inferred.
- exact chunks: those that came last in their read. The kernel stamps a read with its last
  segment's arrival, so only these have an exact kernel arrival; the earlier chunks of a coalesced
  read are dated with the later one. `exact_delivery_p99_s` is the error on them alone: the
  stamping itself, whatever the client's lateness. The lateness is `late_*` (own stamp - kernel
  arrival, per read).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from rigbench.analysis import arrival_ns, chunk_token_counts, request_timing
from rigbench.records import Frozen, StreamResult
from rigbench.testing._truth import RequestTruth

__all__ = ["AccuracyReport", "compare_with_truth", "true_itl_s"]


class AccuracyReport(Frozen):
    requests: int  # client results matched with a truth record
    unmatched: int  # client results without one (must be 0)
    tokens: int
    ttft_err_p50_s: float
    ttft_err_p99_s: float
    ttft_err_max_s: float
    itl_err_p50_s: float  # absolute per-token ITL error
    itl_err_p99_s: float
    itl_err_max_s: float
    delivery_p99_s: float  # client stamp minus true write, every chunk (always >= 0 when honest)
    delivery_min_s: float
    token_count_mismatches: int  # requests whose output tokens, chunks or tokens per chunk differ
    zero_itl: int  # per-token ITLs of exactly 0 where the truth had none
    coalesced_chunks: int
    sent_after_received: int  # causality breaks: client sent_ns later than emulator received_ns
    arrival_source: str = "user"  # kernel | user | mixed: the clock of the errors above
    chunks: int = 0
    exact_chunks: int = 0  # chunks that came last in their read (an exact kernel arrival)
    exact_delivery_p99_s: float = float("nan")  # |arrival - true write| over exact chunks
    exact_delivery_max_s: float = float("nan")
    coalesced_read_share: float = 0.0  # reads that carried more than one chunk / reads
    late_p50_s: float = float("nan")  # own stamp - kernel arrival, per read (kernel-stamped only)
    late_p99_s: float = float("nan")


def true_itl_s(t: RequestTruth) -> list[float]:
    """Per-token ITL of the truth, by the definition in docs/metrics.md."""
    out: list[float] = []
    for i in range(1, len(t.chunk_ns)):
        k = t.chunk_tokens[i]
        out.extend([(t.chunk_ns[i] - t.chunk_ns[i - 1]) / 1e9 / k] * k)
    return out


def compare_with_truth(results: Iterable[StreamResult], truth: Iterable[RequestTruth]) -> AccuracyReport:
    by_id = {t.response_id: t for t in truth}
    ttft_err: list[float] = []
    itl_err: list[float] = []
    delivery: list[float] = []
    exact: list[float] = []
    late: list[float] = []
    sources: set[str] = set()
    n = unmatched = tokens = mismatches = zero = coalesced = causality = chunks = reads = multi_reads = 0
    for r in results:
        t = by_id.get(r.response_id or "")
        if t is None or not t.chunk_ns or not r.chunk_ns:
            unmatched += 1
            continue
        n += 1
        arrived, source = arrival_ns(r)
        sources.add(source)
        own = r.chunk_ns
        chunks += len(own)
        for j, (at, e) in enumerate(zip(arrived, t.chunk_ns, strict=False)):
            first_of_read = j == 0 or own[j - 1] != own[j]
            reads += first_of_read
            multi_reads += not first_of_read and (j < 2 or own[j - 2] != own[j])
            if j + 1 == len(own) or own[j + 1] != own[j]:  # last in its read
                exact.append((at - e) / 1e9)
            if first_of_read and source == "kernel":
                late.append((own[j] - at) / 1e9)
        timing = request_timing(r)
        tokens += timing.output_tokens
        coalesced += timing.coalesced_chunks
        if r.sent_ns > t.received_ns:
            causality += 1
        counts, _ = chunk_token_counts(r, timing.output_tokens)
        if (timing.output_tokens != t.output_tokens or len(r.chunk_ns) != len(t.chunk_ns)
                or counts != t.chunk_tokens):
            mismatches += 1
        ttft_err.append((arrived[0] - t.chunk_ns[0]) / 1e9)
        delivery.extend((c - e) / 1e9 for c, e in zip(arrived, t.chunk_ns, strict=False))
        truth_itl = true_itl_s(t)
        m = min(len(truth_itl), len(timing.itl_s))
        if m:
            a = np.asarray(timing.itl_s[-m:])
            b = np.asarray(truth_itl[-m:])
            itl_err.extend(np.abs(a - b).tolist())
            zero += int(np.sum((a == 0.0) & (b > 0.0)))

    def q(xs: list[float], p: float) -> float:
        return float(np.percentile(np.abs(np.asarray(xs)), p)) if xs else float("nan")

    return AccuracyReport(
        requests=n, unmatched=unmatched, tokens=tokens,
        ttft_err_p50_s=q(ttft_err, 50), ttft_err_p99_s=q(ttft_err, 99), ttft_err_max_s=q(ttft_err, 100),
        itl_err_p50_s=q(itl_err, 50), itl_err_p99_s=q(itl_err, 99), itl_err_max_s=q(itl_err, 100),
        delivery_p99_s=q(delivery, 99), delivery_min_s=min(delivery) if delivery else float("nan"),
        token_count_mismatches=mismatches, zero_itl=zero, coalesced_chunks=coalesced,
        sent_after_received=causality,
        arrival_source="mixed" if len(sources) > 1 else next(iter(sources), "user"),
        chunks=chunks, exact_chunks=len(exact), exact_delivery_p99_s=q(exact, 99), exact_delivery_max_s=q(exact, 100),
        coalesced_read_share=multi_reads / reads if reads else 0.0,
        late_p50_s=q(late, 50), late_p99_s=q(late, 99),
    )
