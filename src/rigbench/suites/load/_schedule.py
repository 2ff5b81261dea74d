"""Arrival schedules of open-loop load: when each request is meant to start, as offsets from zero.

- constant: one request every 1/rate seconds.
- poisson: exponential gaps with mean 1/rate (gamma with shape 1).
- gamma: gaps drawn from a gamma distribution of shape `burstiness` and mean 1/rate, as
  `vllm bench serve --burstiness` names it: below 1 burstier than Poisson, above 1 more regular.

The first request starts at zero. The schedule is a pure function of its inputs and the seed, so a
resumed window sends the same schedule again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import numpy as np

__all__ = ["arrival_offsets_s", "sleep_until_ns"]

# A duration-bounded schedule stops at this many requests: beyond it the run would not fit in memory
# or time, and the settings' validation says so before anything is sent.
MAX_SCHEDULED = 2_000_000
# Sleep until this close to a send, then yield to the loop until it is due (timer wake-ups are
# only millisecond-accurate; yielding keeps reading the streams in flight while waiting).
_SPIN_NS = 2_000_000


def arrival_offsets_s(rate_rps: float, arrival: str, burstiness: float, *, seed: int,
                      duration_s: float | None = None, count: int | None = None) -> list[float]:
    """Intended start offsets in seconds: the first `count`, or every one before `duration_s`."""
    if not rate_rps > 0:
        raise ValueError(f"a schedule needs a positive rate; got {rate_rps!r}")
    if (duration_s is None) == (count is None):
        raise ValueError("give a duration or a count, not both or neither")
    if arrival == "constant":
        n = count if count is not None else int(np.ceil((duration_s or 0.0) * rate_rps))
        offsets = np.arange(n, dtype=float) / rate_rps
    elif arrival in ("poisson", "gamma"):
        shape = 1.0 if arrival == "poisson" else burstiness
        rng = np.random.default_rng(seed)
        mean_gap = 1.0 / rate_rps
        n = count if count is not None else int((duration_s or 0.0) * rate_rps * 1.5 + 16)
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
    """Return at `due_ns` on `clock` (perf_counter_ns unless a client actor's own clock is given)."""
    while True:
        left = due_ns - clock()
        if left <= 0:
            return
        await asyncio.sleep((left - _SPIN_NS) / 1e9 if left > _SPIN_NS * 2 else 0)
