"""rigbench watching itself: client CPU, event-loop lag, send lag and GC pauses while a suite runs.

    async with SelfCheckMonitor("speed", writer.append) as mon:
        await suite.run(ctx)

On exit one `SelfCheck` record (kind="selfcheck") goes to `emit`. Judging the record
("client-bound") happens in `rigbench.analysis`.

Its cost scales with what the loop is doing, not with wall time: a probe every 5 ms costs 2-3%
of a core on its own (measured on the 2-core VM, 2026-11-30), which at one slow stream was most
of rigbench's CPU per request. So the loop-lag probe's interval doubles, from `interval_s` (5 ms)
up to `max_interval_s` (100 ms), after every probe, except that the first late probe after a
quiet one (lag over QUIET_LAG_S) brings it back to 5 ms: the onset of lag is sampled densely,
quiet spans and lasting lag (a loaded machine whose level is already seen) sparsely, never less
than 10 times a second. Each sample stands for the time until the next one (the pace it
chose: short after a late probe, long after quiet ones), and the lag percentiles are weighted by
that time (`_time_weighted_q`), so they read as a fixed-pace probe's
would while costing a tenth as much. GC pauses are timed by the collector's own
callbacks, whatever the probe's pace. Plus one list append per request.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import time
from collections.abc import Callable
from types import TracebackType

import numpy as np

from rigbench.records import SelfCheck

__all__ = ["SelfCheckMonitor", "current_monitor", "use_monitor"]

_perf_ns = time.perf_counter_ns
_thread_ns = time.thread_time_ns

GC_SLOW_PAUSE_S = 0.0005  # half the smallest threshold the analysis judges (1 ms)
GC_SLOW_PAUSES_KEPT = 100
QUIET_LAG_S = 0.00025  # a probe this prompt found the loop idle: the next one may wait longer
# uvloop keeps timer deadlines in whole milliseconds, so a timer may fire up to 1 ms after the
# perf_counter deadline on an idle loop; lateness beyond that is the loop (or the OS) holding it.
TIMER_SLACK_NS = 1_000_000

_current: contextvars.ContextVar[SelfCheckMonitor | None] = contextvars.ContextVar(
    "rigbench_selfcheck", default=None
)


def current_monitor() -> SelfCheckMonitor | None:
    """The monitor wrapped around the running code, if any (the client reports send lag to it)."""
    return _current.get()


def use_monitor(monitor: SelfCheckMonitor | None) -> None:
    """Report the send lags of the running task to `monitor` from now on (a client actor's requests
    run outside the `async with` of its own monitor)."""
    _current.set(monitor)


def _q(xs: list[int], q: float) -> float | None:
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q)) / 1e9 if xs else None


def _time_weighted_q(xs: list[int], spans: list[int], q: float) -> float | None:
    """The q-th percentile of lag over time: each sample stands for the span until the next one.

    With the probe's pace adapting (dense where lag begins, sparse elsewhere), a plain percentile
    over the samples would overweight the dense spans; weighting by span gives the figure a probe
    at a fixed pace would give, so a 12 ms start-up burst in a 3 s run stays 0.4% of the time.
    """
    if not xs:
        return None
    order = np.argsort(np.asarray(xs))
    lags = np.asarray(xs, dtype=np.float64)[order]
    cum = np.cumsum(np.asarray(spans, dtype=np.float64)[order])
    i = int(np.searchsorted(cum, cum[-1] * q / 100.0))
    return float(lags[min(i, len(lags) - 1)]) / 1e9


class SelfCheckMonitor:
    """Async context manager sampling loop lag (every `interval_s` while there is lag, backing off to
    `max_interval_s` while there is none) and collecting send lags."""

    def __init__(
        self, label: str, emit: Callable[[SelfCheck], object] | None = None, *, interval_s: float = 0.005,
        max_interval_s: float = 0.1,
    ) -> None:
        self.label = label
        self.emit = emit
        self.interval_s = interval_s
        self.max_interval_s = max(interval_s, max_interval_s)
        self._next_s = interval_s
        self.loop_lags_ns: list[int] = []
        self.loop_lag_at_ns: list[int] = []  # when each sample was taken
        self.send_lags_ns: list[int] = []
        self.record: SelfCheck | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due_ns = 0
        self._was_quiet = True
        self._closed = False
        self._token: contextvars.Token[SelfCheckMonitor | None] | None = None
        self._gc_start = 0
        self._gc_cpu_start = 0
        self.gc_pauses_ns: list[int] = []
        self.gc_slow_ns: list[tuple[int, int]] = []  # (wall, thread CPU) of each slow collection

    def note_send_lag(self, lag_ns: int) -> None:
        self.send_lags_ns.append(max(0, lag_ns))

    def _arm(self, loop: asyncio.AbstractEventLoop, delay_s: float) -> None:
        self._due_ns = _perf_ns() + int(delay_s * 1e9)
        self._handle = loop.call_later(delay_s, self._tick)

    def _tick(self) -> None:
        # Two views of how late the loop would run a callback (a data_received, a send): how late
        # this timer fired (a stuck loop or a descheduled process holds every timer), and how long
        # a probe queued now waits behind whatever is ready. Timed with perf_counter, not
        # loop.time(): uvloop's timer clock has 1 ms resolution, hence TIMER_SLACK_NS.
        now = _perf_ns()
        asyncio.get_running_loop().call_soon(self._probe, now, now - self._due_ns - TIMER_SLACK_NS)

    def _probe(self, queued_ns: int, timer_late_ns: int) -> None:
        if self._closed:  # queued just before the block ended: neither count it nor re-arm
            return
        now = _perf_ns()
        lag = max(now - queued_ns, timer_late_ns)
        self.loop_lags_ns.append(lag)
        self.loop_lag_at_ns.append(now)
        quiet = lag < QUIET_LAG_S * 1e9
        if not quiet and self._was_quiet:  # lag begins: sample it densely
            self._next_s = self.interval_s
        else:  # quiet, or lag that has lasted (a loaded machine): its level is known, sample less
            self._next_s = min(self._next_s * 2, self.max_interval_s)
        self._was_quiet = quiet
        self._arm(asyncio.get_running_loop(), self._next_s)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = _perf_ns()
            self._gc_cpu_start = _thread_ns()
        elif self._gc_start:
            wall = _perf_ns() - self._gc_start
            self.gc_pauses_ns.append(wall)
            if wall >= GC_SLOW_PAUSE_S * 1e9 and len(self.gc_slow_ns) < GC_SLOW_PAUSES_KEPT:
                self.gc_slow_ns.append((wall, _thread_ns() - self._gc_cpu_start))

    async def __aenter__(self) -> SelfCheckMonitor:
        loop = asyncio.get_running_loop()
        self._loop_name = f"{type(loop).__module__}.{type(loop).__qualname__}"
        self._t0 = time.perf_counter()
        self._c0 = time.process_time()
        self._token = _current.set(self)
        self._next_s = self.interval_s
        self._was_quiet = True
        self._closed = False
        self._arm(loop, self.interval_s)
        gc.callbacks.append(self._on_gc)
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._token is not None:
            _current.reset(self._token)
        ll, sl = self.loop_lags_ns, self.send_lags_ns
        # each sample stands for the time until the next (the pace it chose), the last until now
        # (none when the block ended before the first probe fired: a suite that fails at once)
        at = self.loop_lag_at_ns
        spans = [b - a for a, b in zip(at, [*at[1:], _perf_ns()], strict=True)] if at else []
        self.record = SelfCheck(
            unit_id=f"selfcheck/{self.label}",
            label=self.label,
            wall_s=time.perf_counter() - self._t0,
            cpu_s=time.process_time() - self._c0,
            cpu_cores=os.cpu_count() or 1,
            loop_lag_samples=len(ll),
            loop_lag_p50_s=_time_weighted_q(ll, spans, 50),
            loop_lag_p99_s=_time_weighted_q(ll, spans, 99),
            loop_lag_max_s=max(ll) / 1e9 if ll else None,
            send_lag_samples=len(sl),
            send_lag_p50_s=_q(sl, 50),
            send_lag_p99_s=_q(sl, 99),
            send_lag_max_s=max(sl) / 1e9 if sl else None,
            gc_pauses=len(self.gc_pauses_ns),
            gc_pause_total_s=sum(self.gc_pauses_ns) / 1e9,
            gc_pause_max_s=max(self.gc_pauses_ns, default=0) / 1e9,
            gc_slow_pauses_s=[w / 1e9 for w, _ in self.gc_slow_ns],
            gc_slow_pauses_cpu_s=[c / 1e9 for _, c in self.gc_slow_ns],
            loop=self._loop_name,
        )
        if self.emit is not None:
            self.emit(self.record)
