"""Was the client, not the server, the bottleneck? Judged from a run's `selfcheck` records.

Thresholds (why):
- CPU over 80% of one core: the event loop runs on one core; near it, reads queue up and every
  stamp is late by the queue.
- loop lag p99 over 1 ms: a callback (a socket read) waits that long to run, so timing is off by
  as much: the accuracy rigbench promises is 1 ms at p99.
- send lag p99 over 5 ms: requests go out later than the suite meant, so the offered load was
  lower than asked.
- a GC pause over 1 ms: same effect as loop lag while it lasts.

Remedies follow from the cause, not from the symptom. Lag with the client's core mostly idle was
other processes holding the CPU (the OS), not rigbench's own work, so lowering the concurrency
does not help; a GC pause whose thread CPU is far below its wall time was the OS too. A single
pause over the threshold delays at most one chunk stamp per stream in flight, by at most its
length: it moves a TTFT (or an end-to-end time) by up to the pause and a mean ITL by the pause /
(tokens - 1). When it is no longer than the spread of the run's TTFTs (`noise_s`) it changes no
figure beyond its noise, and is a note, not a reason to doubt the run.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from rigbench.records import Frozen, SelfCheck

__all__ = [
    "CPU_FRACTION_MAX",
    "GC_PAUSE_MAX_S",
    "LOOP_LAG_P99_MAX_S",
    "OUTSIDE_LOAD_REMEDY",
    "SEND_LAG_P99_MAX_S",
    "ClientVerdict",
    "assess_selfcheck",
]

CPU_FRACTION_MAX = 0.80
LOOP_LAG_P99_MAX_S = 0.001
SEND_LAG_P99_MAX_S = 0.005
GC_PAUSE_MAX_S = 0.001
# Below this share of the client's core, lag is not the client's own work but the OS running
# other processes (a loaded client shows its CPU near the 80% limit first).
OWN_WORK_CPU_FRACTION = 0.5
# A pause whose thread CPU is below this share of its wall time was mostly spent descheduled.
GC_OWN_CPU_SHARE = 0.5


class ClientVerdict(Frozen):
    """The self-check's judgement of one monitored span (or of several, merged)."""

    client_bound: bool
    labels: list[str] = Field(default_factory=list)  # the spans judged
    reasons: list[str] = Field(default_factory=list)  # what exceeded which threshold, with figures
    remedy: str | None = None
    notes: list[str] = Field(default_factory=list)  # seen, bounded, and harmless to the figures
    # The reasons (a subset of `reasons`) whose cause was not rigbench's own work: lag while the client
    # used little of its core, a GC pause spent descheduled. Reports name the host's load for these,
    # not CLIENT-BOUND (analysis/_run.py, with the host conditions).
    outside_reasons: list[str] = Field(default_factory=list)
    own_remedy: str | None = None  # the remedies of the other reasons (rigbench's own work)


OUTSIDE_LOAD_REMEDY = _OUTSIDE_LOAD = (
    "keep other work off the client's core (pin the server to other cores, e.g. `taskset`, or run "
    "rigbench on another machine) and repeat the run; lowering the concurrency does not help here"
)


def assess_selfcheck(records: Iterable[SelfCheck], *, noise_s: float | None = None) -> ClientVerdict:
    """Flag "client-bound" when a monitored span exceeded a threshold; say why and what to do.

    `noise_s`: the spread (standard deviation) of the run's TTFTs, the figure a late stamp moves
    the most; None when the run has none (then every pause over the threshold is flagged).
    """
    reasons: list[str] = []
    remedies: list[str] = []
    notes: list[str] = []
    labels: list[str] = []
    outside: list[str] = []
    for r in records:
        labels.append(r.label)
        own_work = r.cpu_fraction >= OWN_WORK_CPU_FRACTION
        if r.cpu_fraction > CPU_FRACTION_MAX:
            reasons.append(
                f"{r.label}: the client used {r.cpu_fraction:.0%} of a core (limit {CPU_FRACTION_MAX:.0%})"
            )
            remedies.append(
                "lower the concurrency or the output length per run, install the `fast` extra "
                "(uvloop), or run rigbench on a machine (or core) the server does not use"
            )
        if r.loop_lag_p99_s is not None and r.loop_lag_p99_s > LOOP_LAG_P99_MAX_S:
            cause = (
                f"the client was busy ({r.cpu_fraction:.0%} of a core)" if own_work else
                f"the client used only {r.cpu_fraction:.0%} of a core, so other processes held the CPU"
            )
            reasons.append(
                f"{r.label}: event-loop lag p99 {r.loop_lag_p99_s * 1e3:.2f} ms "
                f"(limit {LOOP_LAG_P99_MAX_S * 1e3:.0f} ms): chunk stamps may be late by as much; {cause}"
            )
            remedies.append(
                "lower the concurrency, or install the `fast` extra (uvloop)" if own_work else _OUTSIDE_LOAD
            )
            if not own_work:
                outside.append(reasons[-1])
        if r.send_lag_p99_s is not None and r.send_lag_p99_s > SEND_LAG_P99_MAX_S:
            reasons.append(
                f"{r.label}: send lag p99 {r.send_lag_p99_s * 1e3:.1f} ms "
                f"(limit {SEND_LAG_P99_MAX_S * 1e3:.0f} ms): requests left later than scheduled"
            )
            remedies.append("lower the concurrency, or raise the client's connection limit" if own_work
                            else _OUTSIDE_LOAD)
            if not own_work:
                outside.append(reasons[-1])
        if r.gc_pause_max_s > GC_PAUSE_MAX_S:
            before = len(reasons)
            _judge_gc(r, noise_s, reasons, remedies, notes)
            if len(reasons) > before and remedies[-1] == _OUTSIDE_LOAD:
                outside.append(reasons[-1])
    uniq = list(dict.fromkeys(remedies))
    return ClientVerdict(
        client_bound=bool(reasons), labels=labels, reasons=reasons, remedy="; ".join(uniq) if uniq else None,
        notes=notes, outside_reasons=outside,
        own_remedy="; ".join(x for x in uniq if x != _OUTSIDE_LOAD) or None,
    )


def _judge_gc(r: SelfCheck, noise_s: float | None, reasons: list[str], remedies: list[str],
              notes: list[str]) -> None:
    long = [(w, c) for w, c in zip(r.gc_slow_pauses_s, r.gc_slow_pauses_cpu_s, strict=False)
            if w > GC_PAUSE_MAX_S]
    worst = r.gc_pause_max_s
    what = f"{r.label}: a garbage-collection pause of {worst * 1e3:.1f} ms ({r.gc_pauses} collections in all"
    if len(long) == 1 and noise_s is not None and worst <= noise_s:
        notes.append(
            f"{what}, this one the only one over {GC_PAUSE_MAX_S * 1e3:.0f} ms): it could delay at most one "
            f"chunk stamp per stream in flight by {worst * 1e3:.1f} ms, within the spread of the run's TTFTs "
            f"(std {noise_s * 1e3:.1f} ms), so it moved no figure beyond its noise"
        )
        return
    if not long:  # a record without per-pause detail (older runs): the cause is unknown
        reasons.append(f"{what})")
        # (the other remedies already say to keep other work off the client's core; don't repeat it)
        remedies.append("repeat the run (this record has no per-pause detail, so the pause's cause is unknown)")
        return
    wall = sum(w for w, _ in long)
    cpu = sum(c for _, c in long)
    if cpu < GC_OWN_CPU_SHARE * wall:
        reasons.append(
            f"{what}; {len(long)} over {GC_PAUSE_MAX_S * 1e3:.0f} ms, in which the collector ran only "
            f"{cpu * 1e3:.1f} ms of {wall * 1e3:.1f} ms: the OS ran other processes meanwhile)"
        )
        remedies.append(_OUTSIDE_LOAD)
    else:
        reasons.append(
            f"{what}; {len(long)} over {GC_PAUSE_MAX_S * 1e3:.0f} ms, the collector busy {cpu * 1e3:.1f} ms "
            f"of {wall * 1e3:.1f} ms: many objects were alive)"
        )
        remedies.append(
            "repeat the run; rigbench freezes its long-lived objects before measuring (gc.freeze), so a "
            "collection this long means objects piled up during the span: report it with the run directory"
        )
