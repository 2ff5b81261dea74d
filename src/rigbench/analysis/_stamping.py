"""The run's own stamping error: how late rigbench saw each read after the kernel received it.

For every read that delivered a chunk, rigbench keeps its own stamp (`chunk_ns`) and, where the OS
gives one, the kernel's arrival stamp (`chunk_kernel_ns`, SO_TIMESTAMPNS). Their difference is the
client's lateness for that read; metrics use the kernel stamp (analysis/_timing.py), so the
lateness no longer enters TTFT or ITL, except in reads that carried several chunks: the kernel
stamps a read with its last segment's arrival, so the earlier chunks of a coalesced read are
dated late. Hence the second figure: the share of reads that coalesced several chunks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np

from rigbench.records import Frozen, StreamResult

__all__ = ["StampingError", "stamping_error", "stamping_text"]


class StampingError(Frozen):
    source: Literal["kernel", "user", "mixed", "not recorded"]
    requests_kernel: int  # requests whose chunks carry kernel stamps
    requests_user: int  # requests with rigbench's own stamps only
    user_reason: str | None  # why user-space stamps (the most frequent reason)
    reads: int  # reads that delivered chunks, in kernel-stamped requests
    late_p50_s: float | None  # own stamp - kernel arrival
    late_p99_s: float | None
    late_max_s: float | None
    coalesced_share: float | None  # reads that carried more than one chunk / reads
    clock_uncertainty_max_s: float | None  # of the realtime -> perf_counter conversion


def stamping_error(results: Iterable[StreamResult]) -> StampingError:
    late: list[int] = []
    reads = coalesced = n_kernel = n_user = n_unrecorded = 0
    reasons: dict[str, int] = {}
    unc = 0
    for r in results:
        if not r.chunk_ns:
            continue
        if r.arrival is None:
            n_unrecorded += 1
            continue
        if r.arrival.source != "kernel" or len(r.chunk_kernel_ns) != len(r.chunk_ns):
            n_user += 1
            why = r.arrival.reason or "no kernel stamps recorded"
            reasons[why] = reasons.get(why, 0) + 1
            continue
        n_kernel += 1
        unc = max(unc, r.arrival.clock_uncertainty_ns or 0)
        prev, run = None, 0
        for own, kern in zip(r.chunk_ns, r.chunk_kernel_ns, strict=True):
            if own == prev:  # the same read as the chunk before (one own stamp per read)
                coalesced += run == 1
                run += 1
                continue
            reads += 1
            late.append(own - kern)
            prev, run = own, 1
    p50: float | None = None
    p99: float | None = None
    mx: float | None = None
    if n_kernel:
        a = np.asarray(late, dtype=np.float64) / 1e9
        p50, p99, mx = float(np.percentile(a, 50)), float(np.percentile(a, 99)), float(a.max())
    source: Literal["kernel", "user", "mixed", "not recorded"] = (
        "mixed" if n_kernel and n_user else "kernel" if n_kernel else "user" if n_user else "not recorded")
    return StampingError(
        source=source, requests_kernel=n_kernel, requests_user=n_user,
        user_reason=max(reasons, key=lambda k: reasons[k]) if reasons else None,
        reads=reads, late_p50_s=p50, late_p99_s=p99, late_max_s=mx,
        coalesced_share=coalesced / reads if reads else None,
        clock_uncertainty_max_s=unc / 1e9 if n_kernel else None,
    )


def stamping_text(se: StampingError) -> str:
    """One line for the report and the fingerprint table."""
    if se.source == "not recorded":
        return "not recorded (a run from before kernel arrival stamps)"
    if se.source == "user":
        return f"user-space stamps: {se.user_reason}"
    assert se.late_p50_s is not None and se.late_p99_s is not None and se.coalesced_share is not None
    mixed = (f"; {se.requests_user} of {se.requests_user + se.requests_kernel} requests on user-space stamps "
             f"({se.user_reason})" if se.source == "mixed" else "")
    return (f"kernel arrivals (SO_TIMESTAMPNS); rigbench's own stamping error (own stamp - kernel arrival) "
            f"p50 {se.late_p50_s * 1e3:.3f} ms, p99 {se.late_p99_s * 1e3:.3f} ms over {se.reads:,} reads; "
            f"{se.coalesced_share:.1%} of reads coalesced several chunks{mixed}")
