"""Arrival schedules of open-loop load: when each request is meant to start, as offsets from zero.

- constant: one request every 1/rate seconds.
- poisson: exponential gaps with mean 1/rate (gamma with shape 1).
- gamma: gaps drawn from a gamma distribution of shape `burstiness` and mean 1/rate, as
  `vllm bench serve --burstiness` names it: below 1 burstier than Poisson, above 1 more regular.

The first request starts at zero. The schedule is a pure function of its inputs and the seed, so a
resumed window sends the same schedule again.

Waking at a send time (`sleep_until_ns`): the event loop's own timers are millisecond-grained (uvloop
keeps deadlines in whole milliseconds), too coarse for a send lag of well under a millisecond. On Linux
a timerfd armed at the absolute due time on CLOCK_MONOTONIC (perf_counter's clock) wakes the loop
through its poll, to the microsecond, without a busy wait: `_Alarm`, one per event loop, armed at the
earliest waiter. Elsewhere (or when the timerfd cannot be made) the loop's timer brings the wait to
within `_SPIN_NS` of the send and the rest is spent yielding to the loop, which holds the lag bound but
costs CPU on every request (benchmarks/rate_adherence.py measures both: `--waker`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import gc
import heapq
import itertools
import math
import os
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = ["arrival_offsets_s", "no_full_collection", "sleep_until_ns"]

_NO_FULL = 1 << 30  # a third-generation threshold no window reaches

# A duration-bounded schedule stops at this many requests: beyond it the run would not fit in memory
# or time, and the settings' validation says so before anything is sent.
MAX_SCHEDULED = 2_000_000
# Without a timerfd: sleep until this close to a send, then yield to the loop until it is due (timer
# wake-ups are only millisecond-accurate; yielding keeps reading the streams in flight while waiting).
_SPIN_NS = 2_000_000
# How sends are woken: "timerfd" where the platform has one, else "spin". A module switch so
# benchmarks/rate_adherence.py can compare both in one run (`--waker`) and tests can force the fallback.
WAKER = "timerfd"


def _bounded(expected: float) -> int:
    """Requests a schedule is made for: `expected` rounded up, at most MAX_SCHEDULED (a duration times a rate
    may pass any int, or overflow a float, before the settings' checks see it: a sweep's rates come later)."""
    return MAX_SCHEDULED if not expected < MAX_SCHEDULED else max(0, math.ceil(expected))


def arrival_offsets_s(offered_rate_rps: float, arrival: str, burstiness: float, *, seed: int,
                      duration_s: float | None = None, count: int | None = None) -> list[float]:
    """Intended start offsets in seconds: the first `count`, or every one before `duration_s`."""
    if not offered_rate_rps > 0:
        raise ValueError(f"a schedule needs a positive rate; got {offered_rate_rps!r}")
    if (duration_s is None) == (count is None):
        raise ValueError("give a duration or a count, not both or neither")
    if arrival == "constant":
        n = count if count is not None else _bounded((duration_s or 0.0) * offered_rate_rps)
        offsets = np.arange(n, dtype=float) / offered_rate_rps
    elif arrival in ("poisson", "gamma"):
        shape = 1.0 if arrival == "poisson" else burstiness
        rng = np.random.default_rng(seed)
        mean_gap = 1.0 / offered_rate_rps
        n = count if count is not None else _bounded((duration_s or 0.0) * offered_rate_rps * 1.5 + 16)
        while True:
            gaps = rng.gamma(shape, mean_gap / shape, size=max(0, n - 1))
            offsets = np.concatenate(([0.0], np.cumsum(gaps))) if n > 0 else np.zeros(0)
            if count is not None or offsets[-1] >= (duration_s or 0.0) or n >= MAX_SCHEDULED:
                break
            n *= 2
            rng = np.random.default_rng(seed)  # the same draws, longer
    else:
        raise ValueError(f"unknown arrival {arrival!r}; choose constant, poisson or gamma")
    if duration_s is not None:
        offsets = offsets[offsets < duration_s]
    return [float(x) for x in offsets[:MAX_SCHEDULED]]


async def sleep_until_ns(due_ns: int, clock: Callable[[], int] = time.perf_counter_ns) -> None:
    """Return at `due_ns` on `clock` (perf_counter_ns unless a client actor's own clock is given), never before.

    `clock` runs at perf_counter's rate (an actor's clock is perf_counter plus a fixed skew), so the wait
    is armed on perf_counter's clock; it is checked again against `clock` on waking. The alarm is armed at
    the due time itself, not at "now + what was left": a thread descheduled between reading the clock and
    arming would otherwise arm late by the stall, and two waits due 3 ms apart could wake out of order."""
    left = due_ns - clock()
    if left <= 0:
        return
    alarm = _alarm() if WAKER == "timerfd" else None
    if alarm is not None:
        while True:
            if clock is time.perf_counter_ns:
                at = due_ns
            else:  # read perf_counter first: a stall between the two reads arms early (checked again), never late
                p = time.perf_counter_ns()
                at = due_ns - (clock() - p)
            await alarm.wait(at)
            if clock() >= due_ns:
                return
    while True:
        left = due_ns - clock()
        if left <= 0:
            return
        await asyncio.sleep((left - _SPIN_NS) / 1e9 if left > _SPIN_NS * 2 else 0)


def waker() -> str:
    """How `sleep_until_ns` wakes in this process: "timerfd", or "spin" and why (a benchmark says which it measured)."""
    if WAKER != "timerfd":
        return f"spin (rigbench.suites.load._schedule.WAKER = {WAKER!r})"
    fns, why = _timerfd()
    if fns is None or _refused:
        return f"spin ({_refused or why})"
    return "timerfd"


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


_CLOCK_MONOTONIC = 1
_TFD_TIMER_ABSTIME = 1
# TFD_NONBLOCK and TFD_CLOEXEC are O_NONBLOCK and O_CLOEXEC (os names them for this platform)
_TFD_FLAGS = getattr(os, "O_NONBLOCK", 0o4000) | getattr(os, "O_CLOEXEC", 0o2000000)


@functools.cache
def _timerfd() -> tuple[tuple[Any, Any] | None, str]:
    """libc's timerfd_create and timerfd_settime, or None and why not (looked up on first use)."""
    if sys.platform != "linux":
        return None, f"timerfd is Linux only (this is {sys.platform})"
    impl = time.get_clock_info("perf_counter").implementation
    if "CLOCK_MONOTONIC" not in impl or "RAW" in impl:
        return None, f"perf_counter is {impl}, not CLOCK_MONOTONIC"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        create, settime = libc.timerfd_create, libc.timerfd_settime
    except (OSError, AttributeError) as e:
        return None, f"no timerfd in libc: {e}"
    create.argtypes, create.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
    settime.restype = ctypes.c_int
    return (create, settime), ""


_refused = ""  # why a timerfd could not be made in this process after all (then every wait spins)
_alarms: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Alarm | None] = weakref.WeakKeyDictionary()


def _alarm() -> _Alarm | None:
    """The running loop's alarm, made on first use; None where no timerfd can be made (then: spin)."""
    global _refused
    loop = asyncio.get_running_loop()
    try:
        return _alarms[loop]
    except KeyError:
        pass
    alarm = None
    fns, _ = _timerfd()
    if fns is not None and not _refused:
        try:
            alarm = _Alarm(loop, *fns)
        except (OSError, NotImplementedError) as e:  # out of descriptors; a loop without add_reader
            _refused = f"no timerfd in this loop's poll: {type(e).__name__}: {e}"
    _alarms[loop] = alarm
    return alarm


class _Alarm:
    """A timerfd in the loop's poll, armed at the earliest pending due time (absolute, CLOCK_MONOTONIC):
    the loop wakes when it expires and releases every waiter then due. Closed with its loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, create: Any, settime: Any) -> None:
        self._settime = settime
        fd = create(_CLOCK_MONOTONIC, _TFD_FLAGS)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self._fd = fd
        self._spec = _Itimerspec()
        self._armed_ns = 0  # the due time the timerfd is set to (0: none)
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        try:
            loop.add_reader(fd, self._expired)
        except BaseException:
            os.close(fd)
            raise
        weakref.finalize(loop, os.close, fd)  # the fd lives as long as its loop

    def wait(self, at_ns: int) -> asyncio.Future[None]:
        """A future done at `at_ns` on perf_counter's clock (or later)."""
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (at_ns, next(self._seq), fut))
        if not self._armed_ns or at_ns < self._armed_ns:
            self._arm(at_ns)
        return fut

    def _arm(self, at_ns: int) -> None:
        v = self._spec.it_value
        v.tv_sec, v.tv_nsec = divmod(at_ns, 1_000_000_000)
        if self._settime(self._fd, _TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_settime: {os.strerror(err)}")
        self._armed_ns = at_ns

    def _expired(self) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):  # re-armed later since polled: not expired
            os.read(self._fd, 8)
        self._armed_ns = 0
        now = time.perf_counter_ns()
        w = self._waiters
        while w and w[0][0] <= now:
            fut = heapq.heappop(w)[2]
            if not fut.done():  # a cancelled wait leaves its entry behind
                fut.set_result(None)
        if w:
            self._arm(w[0][0])


@contextlib.contextmanager
def no_full_collection() -> Iterator[None]:
    """While a window sends: what exists before it (prompts, bodies) leaves the collector's view
    (`gc.freeze`, as the runner does before the suites), and no full collection runs. A full one walks
    everything the window has made so far: 80 ms at 1,000 req/s on the 2-core VM, every send in that
    time late. The young generations still collect; the thresholds come back when the window ends. Ray
    client actors hold it too while they send their share (`scale`)."""
    saved = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(saved[0], saved[1], _NO_FULL)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
