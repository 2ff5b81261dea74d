"""A test's own measure of the host, taken beside rigbench with none of rigbench's code: how many cores
processes outside the test's own process tree used, and how many the hypervisor stole, over any span.

The quiet-host controls judge rigbench's busy-host verdict against it. On a shared machine a control
cannot count on a quiet host; instead each window is judged by what this meter saw over it: clearly
quiet (well under both thresholds) must not be called busy, clearly busy (well over one) must be, and
rigbench's figures must agree with the meter's. A window between the two is not judged, and a control
none of whose windows could be judged says so with `tests.needs.missing` (a failure under CI=true),
never passing in silence.

    with SideMeter() as meter:
        <run rigbench>                                      # in-process: meter.sample() at each window's ends
    side = meter.span(record.started_ns, record.ended_ns)   # perf_counter_ns: CLOCK_MONOTONIC, any process
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

import psutil

from rigbench.records import HostConditions

__all__ = ["OTHERS_BUSY", "OTHERS_MARGIN", "STEAL_BUSY", "STEAL_MARGIN", "SideMeter", "SideSpan", "WindowCall", "call_window"]

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
# A busy window as docs/honesty.md ("Busy host") defines it, written here rather than read from rigbench:
# a threshold moved in the code must not move the meter's judgement with it.
OTHERS_BUSY = 0.25
STEAL_BUSY = 0.10
# How far from a threshold the meter's figure must be for the window to be judged, and how far rigbench's
# figure may be from the meter's: both read the same 10 ms tick counters, a little apart in time (windows of
# a few seconds keep that small). Where the meter interpolates between samples, the drift bound is added.
OTHERS_MARGIN = 0.10
STEAL_MARGIN = 0.05


class SideSpan(NamedTuple):
    others_cores: float  # processes outside the test's tree, on the test's CPUs
    steal_cores: float
    wall_s: float
    drift_cores: float  # how far interpolating between samples may be off, at most


class _Sample(NamedTuple):
    t_ns: int
    busy_s: float
    steal_s: float
    ours_s: float


def _proc_stat(cpus: set[int]) -> tuple[float, float]:
    busy = steal = 0.0
    for line in Path("/proc/stat").read_text().splitlines():
        head, _, rest = line.partition(" ")
        if head.startswith("cpu") and head[3:].isdigit() and int(head[3:]) in cpus:
            v = [int(x) for x in rest.split()] + [0] * 8
            busy += (v[0] + v[1] + v[2]) * _TICK_S  # user + nice + system, as cpu_stat reads it
            steal += v[7] * _TICK_S
    return busy, steal


class SideMeter:
    """Samples /proc/stat (the CPUs this process may use) and the CPU time of this process and every
    descendant, every `interval_s`, on a thread of its own; `sample()` takes one more at once (a test that
    runs rigbench in-process calls it as each window opens and closes, so the meter reads where rigbench
    reads instead of interpolating). A descendant that exits keeps its last reading, so a child's end does
    not read as other processes' work."""

    def __init__(self, interval_s: float = 0.02) -> None:
        self.interval_s = interval_s
        self.cpus = set(os.sched_getaffinity(0))
        self.samples: list[_Sample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="side-meter", daemon=True)
        self._procs: dict[int, psutil.Process] = {}
        self._last: dict[int, float] = {}
        self._found_at = 0.0

    def __enter__(self) -> SideMeter:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _ours(self) -> float:
        now = time.monotonic()
        if now - self._found_at > 0.2:  # finding the descendants reads every process: not every sample
            me = psutil.Process()
            for p in [me, *me.children(recursive=True)]:
                self._procs.setdefault(p.pid, p)
            self._found_at = now
        for pid, p in list(self._procs.items()):
            try:
                t = p.cpu_times()
                self._last[pid] = max(self._last.get(pid, 0.0), t.user + t.system)
            except psutil.Error:
                del self._procs[pid]  # gone: its last reading stays in _last
        return sum(self._last.values())

    def sample(self) -> None:
        with self._lock:
            busy, steal = _proc_stat(self.cpus)
            ours = self._ours()
            self.samples.append(_Sample(time.perf_counter_ns(), busy, steal, ours))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def _at(self, t_ns: int) -> tuple[float, float, float, float]:
        """The counters at `t_ns`, interpolated, and the gap (s) between the two samples around it."""
        ts = [s.t_ns for s in self.samples]
        i = bisect.bisect_left(ts, t_ns)
        a, b = self.samples[max(0, i - 1)], self.samples[min(i, len(ts) - 1)]
        f = (t_ns - a.t_ns) / (b.t_ns - a.t_ns) if b.t_ns > a.t_ns else 0.0
        return (a.busy_s + f * (b.busy_s - a.busy_s), a.steal_s + f * (b.steal_s - a.steal_s),
                a.ours_s + f * (b.ours_s - a.ours_s), (b.t_ns - a.t_ns) / 1e9)

    def span(self, t0_ns: int, t1_ns: int) -> SideSpan:
        if not self.samples or t0_ns < self.samples[0].t_ns or t1_ns > self.samples[-1].t_ns:
            raise AssertionError("the span is not inside what the side meter watched")
        b0, s0, o0, g0 = self._at(t0_ns)
        b1, s1, o1, g1 = self._at(t1_ns)
        wall = max(1e-9, (t1_ns - t0_ns) / 1e9)
        # between two samples the others' use can drift from the straight line by at most every CPU's worth
        drift = len(self.cpus) * (g0 + g1) / 2 / wall
        return SideSpan(max(0.0, (b1 - b0) - (o1 - o0)) / wall, max(0.0, s1 - s0) / wall, wall, drift)


class WindowCall(NamedTuple):
    """What the side meter says a window must be called, beside what rigbench called it."""

    window: str
    side: SideSpan
    expected: Literal["quiet", "busy", "unclear"]
    rigbench_others: float | None
    rigbench_steal: float | None
    called_busy: bool

    def __str__(self) -> str:
        rb = ("?" if self.rigbench_others is None else f"{self.rigbench_others:.2f}",
              "?" if self.rigbench_steal is None else f"{self.rigbench_steal:.2f}")
        return (f"{self.window}: side meter others {self.side.others_cores:.2f} steal {self.side.steal_cores:.2f} "
                f"cores (+-{self.side.drift_cores:.2f}) over {self.side.wall_s:.2f} s -> {self.expected}; rigbench "
                f"others {rb[0]} steal {rb[1]}, "
                f"called {'busy' if self.called_busy else 'quiet'}")


def call_window(meter: SideMeter, record: HostConditions, called_busy: bool) -> WindowCall:
    """Judge one window's verdict against the meter: a clear case must be called as the meter says,
    and rigbench's own figures must agree with the meter's to within the margin (raises AssertionError)."""
    side = meter.span(record.started_ns, record.ended_ns)
    wall = record.wall_s
    rb_others = None if record.other_cpu_s is None or wall <= 0 else record.other_cpu_s / wall
    rb_steal = None if record.steal_s is None or wall <= 0 else record.steal_s / wall
    band, steal_band = OTHERS_MARGIN + side.drift_cores, STEAL_MARGIN + side.drift_cores
    if side.others_cores >= OTHERS_BUSY + band or side.steal_cores >= STEAL_BUSY + steal_band:
        expected: Literal["quiet", "busy", "unclear"] = "busy"
    elif side.others_cores < OTHERS_BUSY - band and side.steal_cores < STEAL_BUSY - steal_band:
        expected = "quiet"
    else:
        expected = "unclear"
    call = WindowCall(record.window, side, expected, rb_others, rb_steal, called_busy)
    assert rb_others is not None and rb_steal is not None, f"rigbench left a figure unknown on this host: {call}"
    assert abs(rb_others - side.others_cores) <= band, f"rigbench's other-process figure is off: {call}"
    assert abs(rb_steal - side.steal_cores) <= steal_band, f"rigbench's steal figure is off: {call}"
    if expected != "unclear":
        assert called_busy == (expected == "busy"), f"the window was called wrongly: {call}"
    return call


def judged(calls: Sequence[WindowCall]) -> list[WindowCall]:
    return [c for c in calls if c.expected != "unclear"]
