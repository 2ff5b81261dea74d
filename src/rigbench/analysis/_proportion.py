"""A share of items right (k of n) with its standard error and Wilson interval, and the significance level every
quality test uses. scipy's `binomtest(...).proportion_ci`."""

from __future__ import annotations

import math

from rigbench.records import Frozen

__all__ = ["ALPHA", "Proportion", "proportion"]


ALPHA = 0.05  # significance level of every test here, and 95% intervals


class Proportion(Frozen):
    """k of n, with the standard error sqrt(p(1-p)/n) and a 95% Wilson interval."""

    n: int
    k: int
    p: float
    se: float
    ci_low: float
    ci_high: float


def proportion(k: int, n: int) -> Proportion:
    if n <= 0:
        return Proportion(n=0, k=0, p=math.nan, se=math.nan, ci_low=math.nan, ci_high=math.nan)
    from scipy import stats  # lazy: scipy.stats costs 1-2.5 s at start-up

    p = k / n
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - ALPHA, method="wilson")
    return Proportion(n=n, k=k, p=p, se=math.sqrt(p * (1 - p) / n), ci_low=float(ci.low),
                      ci_high=float(ci.high))
