"""Was the client, not the server, the bottleneck? Judged from a run's `selfcheck` records.

Thresholds (why):
- CPU over 80% of one core: the event loop runs on one core; near it, reads queue up and every
  stamp is late by the queue.
- loop lag p99 over 1 ms: a callback (a socket read) waits that long to run, so timing is off by
  as much: the accuracy rigbench promises is 1 ms at p99.
- send lag p99 over 5 ms: requests go out later than the suite meant, so the offered load was
  lower than asked.
- one GC pause over 1 ms: same effect as loop lag, with its own remedy.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from rigbench.client import SelfCheck

__all__ = [
    "CPU_FRACTION_MAX",
    "LOOP_LAG_P99_MAX_S",
    "SEND_LAG_P99_MAX_S",
    "ClientVerdict",
    "assess_selfcheck",
]

CPU_FRACTION_MAX = 0.80
LOOP_LAG_P99_MAX_S = 0.001
SEND_LAG_P99_MAX_S = 0.005
GC_PAUSE_MAX_S = 0.001


class ClientVerdict(BaseModel):
    """The self-check's judgement of one monitored span (or of several, merged)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    client_bound: bool
    labels: list[str] = Field(default_factory=list)  # the spans judged
    reasons: list[str] = Field(default_factory=list)  # what exceeded which threshold, with figures
    remedy: str | None = None


def assess_selfcheck(records: Iterable[SelfCheck]) -> ClientVerdict:
    """Flag "client-bound" when any monitored span exceeded a threshold; say why and what to do."""
    reasons: list[str] = []
    remedies: list[str] = []
    labels: list[str] = []
    for r in records:
        labels.append(r.label)
        if r.cpu_fraction > CPU_FRACTION_MAX:
            reasons.append(
                f"{r.label}: the client used {r.cpu_fraction:.0%} of a core (limit {CPU_FRACTION_MAX:.0%})"
            )
            remedies.append(
                "lower the concurrency or the output length per run, install the `fast` extra "
                "(uvloop), or run rigbench on a machine (or core) the server does not use"
            )
        if r.loop_lag_p99_s is not None and r.loop_lag_p99_s > LOOP_LAG_P99_MAX_S:
            reasons.append(
                f"{r.label}: event-loop lag p99 {r.loop_lag_p99_s * 1e3:.2f} ms "
                f"(limit {LOOP_LAG_P99_MAX_S * 1e3:.0f} ms): chunk stamps may be late by as much"
            )
            remedies.append(
                "keep other work off the client's core (the server on the same cores competes "
                "for it) and lower the concurrency"
            )
        if r.send_lag_p99_s is not None and r.send_lag_p99_s > SEND_LAG_P99_MAX_S:
            reasons.append(
                f"{r.label}: send lag p99 {r.send_lag_p99_s * 1e3:.1f} ms "
                f"(limit {SEND_LAG_P99_MAX_S * 1e3:.0f} ms): requests left later than scheduled"
            )
            remedies.append("lower the concurrency, or raise the client's connection limit")
        if r.gc_pause_max_s > GC_PAUSE_MAX_S:
            reasons.append(
                f"{r.label}: a garbage-collection pause of {r.gc_pause_max_s * 1e3:.1f} ms "
                f"({r.gc_pauses} in all)"
            )
            remedies.append("fewer requests per run (each keeps its record in memory until written)")
    uniq = list(dict.fromkeys(remedies))
    return ClientVerdict(
        client_bound=bool(reasons), labels=labels, reasons=reasons, remedy="; ".join(uniq) if uniq else None
    )
