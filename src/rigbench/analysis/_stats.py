"""Descriptive statistics: every figure is reported with n, median, mean, standard deviation, and
the 90th, 95th and 99th percentiles (numpy's default linear interpolation between order statistics)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rigbench.records import Frozen

__all__ = ["Stat", "describe"]


class Stat(Frozen):
    n: int
    median: float
    mean: float
    std: float  # sample standard deviation (ddof=1); 0.0 when n == 1
    min: float
    max: float
    p90: float | None = None  # None only in Stats built by hand (tests) or read from older exports
    p99: float | None = None
    p95: float | None = None  # after p99: JSON written before it was added keeps its key order

    def fmt(self, digits: int = 2, scale: float = 1.0) -> str:
        """'median ± std (n)' in the spirit of the seed write-ups."""
        if self.n == 0:
            return "–"
        return f"{self.median * scale:.{digits}f} ± {self.std * scale:.{digits}f}"


def describe(values: Sequence[float]) -> Stat | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    arr = np.asarray(vals)
    return Stat(
        n=len(vals),
        median=float(np.median(arr)),
        mean=float(arr.mean()),
        std=float(arr.std(ddof=1)) if len(vals) > 1 else 0.0,
        min=float(arr.min()),
        max=float(arr.max()),
        p90=float(np.percentile(arr, 90)),
        p99=float(np.percentile(arr, 99)),
        p95=float(np.percentile(arr, 95)),
    )
