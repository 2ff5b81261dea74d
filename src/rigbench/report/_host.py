"""The host-conditions table (who used the CPU in each measured window), built once as a Section."""

from __future__ import annotations

from rigbench.analysis import OTHER_CORES_MAX, STEAL_CORES_MAX, HostVerdict
from rigbench.report._cells import Cell, Note, Section

__all__ = ["host_section"]

_HEAD = ["window", "wall s", "usable cores", "engine", "rigbench", "other processes", "steal", "run queue p50/max",
         "CPU MHz", "host"]
_SHORT = ["window", "wall\ns", "cores", "engine", "rig-\nbench", "other", "steal", "run\nqueue", "MHz", "host"]


def _c(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def host_section(v: HostVerdict) -> Section:
    """One row per window, in cores (CPU seconds / wall seconds); a busy window's figures in red."""
    if not v.recorded:
        return Section("Host conditions: not recorded", [], [], title_severity="warn",
                       lead="This run predates rigbench measuring them, so a busy host can be neither shown nor "
                            "ruled out.")
    rows: list[list[str | Cell]] = []
    for r in v.rows:
        busy_other = r.other_cores is not None and r.other_cores >= OTHER_CORES_MAX
        busy_steal = r.steal_cores is not None and r.steal_cores >= STEAL_CORES_MAX
        rq = "–" if r.run_queue_p50 is None else f"{r.run_queue_p50:g}/{r.run_queue_max}"
        mhz = "–" if r.cpu_mhz_mean is None else (f"{r.cpu_mhz_mean:.0f}" + (f" of {r.cpu_max_mhz:.0f}"
                                                                            if r.cpu_max_mhz else ""))
        unknown = r.other_cores is None
        rows.append([r.window, f"{r.wall_s:.1f}", str(r.usable_cores), _c(r.engine_cores), _c(r.rigbench_cores),
                     Cell(_c(r.other_cores), "error") if busy_other else _c(r.other_cores),
                     Cell(_c(r.steal_cores), "error") if busy_steal else _c(r.steal_cores), rq, mhz,
                     Cell("BUSY", "error") if r.busy else Cell("unknown", "warn") if unknown else Cell("quiet", "ok")])
    busy = sum(1 for r in v.rows if r.busy)
    title = (f"Host conditions: busy in {busy} of {len(v.rows)} windows" if busy
             else f"Host conditions: quiet in all {len(v.rows)} windows" if all(r.other_cores is not None
                                                                              for r in v.rows)
             else "Host conditions: not all known")
    notes = [Note("Cores = CPU seconds / wall seconds of the window, on the CPUs the engine and rigbench may run "
                  "on (their affinity masks). Other processes = all busy time there (/proc/stat) minus the "
                  f"engine's process tree and rigbench. A window is busy at {OTHER_CORES_MAX:g} cores of other "
                  f"processes or {STEAL_CORES_MAX:g} of steal (docs/honesty.md, \"Busy host\")."),
             *(Note(n, "warn") for n in v.notes)]
    return Section(title, _HEAD, rows, notes=notes, short_head=_SHORT,
                   title_severity="error" if busy else None)
