"""SLO targets, goodput and the knee of a rate sweep (docs/metrics.md, "Goodput and the knee").

- A request *meets the SLO* when it succeeded and every target set holds: TTFT and end-to-end
  latency are measured from the request's intended start (response time: what a user waiting in
  the queue sees), ITL is the request's mean inter-token latency.
- **Goodput** (DistServe): requests that met the SLO per second of the window's steady interval; counted by
  analysis/_load.py with `meets_slo` below, its formula is analysis/_metrics.py's `goodput_rps`.
- **Knee**: the highest offered rate at which at least `attainment` (default 99%) of the requests
  met the SLO, bounded above by the lowest tested rate over it that did not. A sweep where every tested
  rate met the SLO has found no knee, only a lower bound ("≥ 162 req/s"); one where none did, an upper
  bound ("< 15.8 req/s"). `rate_bound` gives both sides; the same bound places the highest rate the
  server sustained (analysis/_load.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import NamedTuple

from pydantic import Field

from rigbench.records import Frozen, SloTargets

__all__ = ["SLO_METRICS", "RateBound", "SloCheck", "meets_slo", "parse_slo", "rate_bound"]

SLO_METRICS = ("ttft", "itl", "e2e")
_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_TERM = re.compile(r"^\s*([A-Za-z_0-9]+)\s*=\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_slo(text: str) -> SloTargets:
    """`ttft=500ms,itl=50ms,e2e=10s` -> SloTargets. Raises ValueError naming the term at fault."""
    values: dict[str, float] = {}
    terms = [t for t in text.split(",") if t.strip()]
    if not terms:
        raise ValueError(f"names no target; give e.g. ttft=500ms,itl=50ms,e2e=10s (got {text!r})")
    for term in terms:
        m = _TERM.match(term)
        if m is None:
            raise ValueError(f"cannot read {term.strip()!r}: give METRIC=NUMBER UNIT, e.g. ttft=500ms")
        metric, number, unit = m.group(1).lower(), float(m.group(2)), m.group(3).lower()
        if metric not in SLO_METRICS:
            raise ValueError(f"unknown metric {m.group(1)!r} in {term.strip()!r}; the metrics are "
                             f"{', '.join(SLO_METRICS)}")
        if unit not in _UNITS:
            raise ValueError(f"unknown unit {m.group(3)!r} in {term.strip()!r}; give s, ms or us (e.g. "
                             f"{metric}=500ms)")
        if metric in values:
            raise ValueError(f"{metric} is given twice in {text!r}")
        seconds = number * _UNITS[unit]
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(f"{term.strip()!r}: a target must be a positive time")
        values[metric] = seconds
    return SloTargets(ttft_s=values.get("ttft"), itl_s=values.get("itl"), e2e_s=values.get("e2e"))


class SloCheck(NamedTuple):
    met: bool
    missed: tuple[str, ...]  # the metrics that missed (or "failed" for a failed request)


def meets_slo(slo: SloTargets, *, ok: bool, ttft_s: float | None, itl_s: float | None,
              e2e_s: float | None) -> SloCheck:
    """One request against the targets. A figure that is missing (no decode phase, a withheld TTFT)
    cannot be shown to meet its target, so it misses."""
    if not ok:
        return SloCheck(False, ("failed",))
    missed = tuple(name for name, target, value in (("ttft", slo.ttft_s, ttft_s), ("itl", slo.itl_s, itl_s),
                                                   ("e2e", slo.e2e_s, e2e_s))
                   if target is not None and (value is None or value > target))
    return SloCheck(not missed, missed)


class RateBound(Frozen):
    """Where a threshold rate (the knee, the highest sustained rate) lies among the rates tested: at least
    `low_rps`, the highest tested rate that passed, and below `high_rps`, the lowest tested rate above it that
    failed. None on a side: no tested rate bounds it there (every rate passed: a lower bound only; none did:
    an upper bound only). `out_of_order`: rates that failed below `low_rps` (a curve that is not monotone:
    noise, or a window worth measuring again)."""

    low_rps: float | None
    high_rps: float | None
    tested: int  # rates judged
    out_of_order: list[float] = Field(default_factory=list)

    @property
    def bracketed(self) -> bool:
        """Both sides measured: the threshold lies between two tested rates."""
        return self.low_rps is not None and self.high_rps is not None


def rate_bound(points: Sequence[tuple[float, bool]]) -> RateBound | None:
    """The bound of a threshold from (offered rate, passed) points; None without a point."""
    if not points:
        return None
    passed = [rate for rate, ok in points if ok]
    low = max(passed) if passed else None
    above = [rate for rate, ok in points if not ok and (low is None or rate > low)]
    below = sorted(rate for rate, ok in points if not ok and low is not None and rate < low)
    return RateBound(low_rps=low, high_rps=min(above) if above else None, tested=len(points), out_of_order=below)
