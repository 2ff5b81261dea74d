"""Was the host busy while speed was measured? Judged from a run's `host_conditions` records.

A window is busy when processes that are neither the engine nor rigbench used at least
OTHER_CORES_MAX cores on average over it, or the hypervisor stole at least STEAL_CORES_MAX cores
(both counted on the CPUs the engine and rigbench may run on). Then the engine's figures measure the
host as much as the rig: a llama.cpp decode on 2 cores with one busy-loop neighbour runs at an
eighth of its quiet speed. Thresholds are calibrated by `benchmarks/host_conditions.py` (docs/honesty.md,
"Busy host"): quiet windows sit well below them, one busy-loop neighbour far above.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from pydantic import Field

from rigbench.records import Frozen, HostConditions

__all__ = ["OTHER_CORES_MAX", "STEAL_CORES_MAX", "HostVerdict", "HostWindowRow", "assess_host"]

OTHER_CORES_MAX = 0.25
STEAL_CORES_MAX = 0.10
# A busy verdict names at most this many windows in full (the report's table has every one).
_NAMED = 3


class HostWindowRow(Frozen):
    """One window's figures, in cores (CPU seconds / wall seconds), as the report shows them."""

    window: str
    wall_s: float
    usable_cores: int
    engine_cores: float | None
    rigbench_cores: float | None
    other_cores: float | None
    steal_cores: float | None
    run_queue_p50: float | None
    run_queue_max: int | None
    cpu_mhz_mean: float | None
    cpu_max_mhz: float | None
    gpu_other: int | None  # compute processes on the engine's GPUs that are not the engine's (None: unknown)
    busy: bool
    cause: str | None  # what made it busy, in words with the figures


class HostVerdict(Frozen):
    recorded: bool  # False: the run has no host-conditions records (older than format 6)
    busy: bool = False
    rows: list[HostWindowRow] = Field(default_factory=list)
    findings: list[str] = Field(default_factory=list)  # one per busy window
    notes: list[str] = Field(default_factory=list)  # unknown figures and other processes on the GPU

    @property
    def reason(self) -> str:
        """The busy windows in one sentence (the first few in full), for the trust verdict."""
        named = "; ".join(self.findings[:_NAMED])
        more = f"; and {len(self.findings) - _NAMED} more busy windows" if len(self.findings) > _NAMED else ""
        return f"host busy: {named}{more}. The speed figures measure the host's load, not only the rig"


def _cores(cpu_s: float | None, wall_s: float) -> float | None:
    return None if cpu_s is None or wall_s <= 0 else cpu_s / wall_s


def _row(r: HostConditions) -> HostWindowRow:
    wall = r.wall_s
    other, steal = _cores(r.other_cpu_s, wall), _cores(r.steal_s, wall)
    if other is not None and r.usable_cores:
        other = min(other, float(r.usable_cores))  # 10 ms ticks on both sides can overshoot a full host
    causes = []
    if other is not None and other >= OTHER_CORES_MAX:
        engine = _cores(r.engine_cpu_s, wall)
        causes.append(f"other processes used {other:.2f} of {r.usable_cores} cores while the engine used "
                      + (f"{engine:.2f}" if engine is not None else "an unknown share"))
    if steal is not None and steal >= STEAL_CORES_MAX:
        causes.append(f"the hypervisor took {steal:.2f} of {r.usable_cores} cores for other guests (steal)")
    rq = r.run_queue
    return HostWindowRow(
        window=r.window, wall_s=wall, usable_cores=r.usable_cores,
        engine_cores=_cores(r.engine_cpu_s, wall), rigbench_cores=_cores(r.rigbench_cpu_s, wall),
        other_cores=other, steal_cores=steal,
        run_queue_p50=float(np.median(rq)) if rq else None, run_queue_max=max(rq) if rq else None,
        cpu_mhz_mean=float(np.mean(r.cpu_mhz)) if r.cpu_mhz else None, cpu_max_mhz=r.cpu_max_mhz,
        gpu_other=len(r.gpu_other) if r.gpu_other is not None else None,
        busy=bool(causes), cause=" and ".join(causes) or None,
    )


def assess_host(records: Iterable[HostConditions]) -> HostVerdict:
    """Busy windows (with their cause and figures) and what could not be measured."""
    recs = list(records)
    if not recs:
        return HostVerdict(recorded=False)
    rows = [_row(r) for r in recs]
    findings = [f"during {row.window}, {row.cause}" for row in rows if row.busy]
    notes: list[str] = []
    first = recs[0]
    if first.engine == "remote":
        notes.append(f"host conditions of the server: unknown ({first.unknown.get('engine_cpu_s', 'another host')})")
    else:
        unknown: dict[str, list[str]] = {}
        for r in recs:
            for figure, why in r.unknown.items():
                if figure == "gpu" and why.startswith("not applicable"):
                    continue
                if figure in ("cpu_mhz", "run_queue"):
                    continue  # shown as "–" in the table; they do not decide the verdict
                unknown.setdefault(why, []).append(r.window)
        for why, windows in unknown.items():
            where = "every window" if len(windows) == len(recs) else ", ".join(windows)
            notes.append(f"host conditions unknown ({where}): {why}; a busy host could not be ruled out")
    for r in recs:
        if r.gpu_other:
            procs = ", ".join(f"{g.name} (pid {g.pid}" + (f", {g.used_memory_mib:.0f} MiB)" if g.used_memory_mib
                                                          else ")") for g in r.gpu_other)
            notes.append(f"during {r.window}, other compute processes shared the engine's GPU: {procs}")
    return HostVerdict(recorded=True, busy=bool(findings), rows=rows, findings=findings, notes=notes)
