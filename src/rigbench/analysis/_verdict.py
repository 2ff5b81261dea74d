"""Three verdicts for two runs: "same within ±M", "differs", or "inconclusive" (DESIGN, honesty rule 3).

Not finding a difference is not evidence of none. So:

- **differs**: a significance test rejects equality at α (Welch's t-test for speed; exact McNemar
  or Fisher for accuracies, `analysis/_quality_compare.py`).
- **same within ±M**: an equivalence test rejects "the difference is at least M" at α (two
  one-sided tests, TOST). For speed, on the ratio of means: bounds 1 − M and 1 + M, each tested
  with Welch's statistic for a ratio (`ratio_tost`). For accuracies, the 1 − 2α confidence interval
  of the difference in points lies inside ±M (Newcombe's hybrid score interval built on Wilson
  intervals; paired when both runs answered the same items: `proportion_diff_interval`).
- **inconclusive** otherwise, with the repetitions (items) per side that would decide at ±M with
  80% power, from the observed spread (`repetitions_needed`, `items_needed`).

When both tests reject (a significant difference smaller than the margin, e.g. 1.02× over many
repetitions) the verdict is "same within ±M": the margin is the difference the user said matters.
Distributions come from scipy.stats (t, noncentral t, normal, Wilson intervals of `binomtest`).
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

__all__ = [
    "DEFAULT_MARGIN",
    "POWER",
    "Verdict",
    "items_needed",
    "proportion_diff_interval",
    "ratio_tost",
    "repetitions_needed",
    "three_way",
]

Verdict = Literal["same", "differs", "inconclusive"]
DEFAULT_MARGIN = 0.05  # ±5% on a speed ratio, ±5 points on an accuracy
POWER = 0.8  # the chance the suggested repetitions decide, when the truth is at 0 or at the margin
MAX_NEEDED = 100_000  # beyond this "about N" means "not within reach"


def three_way(*, significant: bool, equivalent: bool) -> Verdict:
    return "same" if equivalent else "differs" if significant else "inconclusive"


class RatioTost(NamedTuple):
    p: float  # the larger of the two one-sided p-values: equivalent when p < α
    p_low: float  # H0: ratio <= 1 - margin
    p_high: float  # H0: ratio >= 1 + margin


def ratio_tost(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int,
               margin: float) -> RatioTost | None:
    """TOST of mean_b / mean_a against [1 - margin, 1 + margin], each one-sided test a Welch test
    of mean_b − θ·mean_a = 0 (no log transform, no delta method). None when a side has n < 2,
    mean_a <= 0, or neither side has spread (then the means decide alone)."""
    if n_a < 2 or n_b < 2 or mean_a <= 0 or (sd_a == 0 and sd_b == 0):
        return None
    from scipy import stats  # lazy: scipy.stats costs 1-2.5 s at start-up

    def p_of(theta: float, upper: bool) -> float:
        va, vb = theta**2 * sd_a**2 / n_a, sd_b**2 / n_b
        t = (mean_b - theta * mean_a) / math.sqrt(va + vb)
        df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
        return float(stats.t.cdf(t, df) if upper else stats.t.sf(t, df))

    lo, hi = p_of(1 - margin, upper=False), p_of(1 + margin, upper=True)
    return RatioTost(p=max(lo, hi), p_low=lo, p_high=hi)


def _power_ok(n: int, rel_var_a: float, rel_var_b: float, margin: float, alpha: float, power: float) -> bool:
    """With n per side: does a TOST conclude "same" with `power` when the ratio is 1, and Welch's
    test conclude "differs" with `power` when it is 1 ± margin? (noncentral t, Welch df)."""
    from scipy import stats

    va, vb = rel_var_a / n, rel_var_b / n
    df = (va + vb) ** 2 / ((va**2 + vb**2) / (n - 1))
    delta = margin / math.sqrt(va + vb)
    t1, t2 = float(stats.t.ppf(1 - alpha, df)), float(stats.t.ppf(1 - alpha / 2, df))
    equiv = 1 - 2 * float(stats.nct.cdf(t1, df, delta))  # each one-sided test fails with this chance at most
    differ = float(stats.nct.sf(t2, df, delta)) + float(stats.nct.cdf(-t2, df, delta))
    return equiv >= power and differ >= power


def repetitions_needed(cv_a: float | None, cv_b: float | None, *, margin: float, alpha: float = 0.05,
                       power: float = POWER) -> int | None:
    """Repetitions per side (the same on both) that tell ±margin with `power`, from the observed
    coefficients of variation (sd / mean) of the two runs. A side without a spread estimate (n < 2)
    borrows the other's. None when neither side has a spread; MAX_NEEDED + 1 when out of reach."""
    known = [c for c in (cv_a, cv_b) if c is not None]
    if not known or max(known) == 0:
        return None
    ra, rb = ((cv_a if cv_a is not None else known[0]) ** 2, (cv_b if cv_b is not None else known[0]) ** 2)
    lo, hi = 2, 2
    while not _power_ok(hi, ra, rb, margin, alpha, power):
        lo, hi = hi, hi * 2
        if hi > MAX_NEEDED:
            return MAX_NEEDED + 1
    while hi - lo > 1:  # power grows with n: the smallest n that is enough
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _power_ok(mid, ra, rb, margin, alpha, power) else (mid, hi)
    return hi if not _power_ok(lo, ra, rb, margin, alpha, power) else lo


class DiffInterval(NamedTuple):
    diff: float  # p_a − p_b, as a fraction
    low: float
    high: float


def _wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    from scipy import stats

    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def proportion_diff_interval(k_a: int, n_a: int, k_b: int, n_b: int, *, confidence: float,
                             both_right: int | None = None, both_wrong: int | None = None) -> DiffInterval:
    """Confidence interval of p_a − p_b: Newcombe's hybrid score interval (1998), from the two
    Wilson intervals. Paired (the same n items, `both_right`/`both_wrong` given): the same interval
    with Newcombe's correlation correction φ (continuity-corrected, so conservative), so identical
    answers on many items give a narrow one."""
    pa, pb = k_a / n_a, k_b / n_b
    la, ua = _wilson(k_a, n_a, confidence)
    lb, ub = _wilson(k_b, n_b, confidence)
    phi = 0.0
    if both_right is not None and both_wrong is not None:
        a_only, b_only = k_a - both_right, k_b - both_right
        den = (both_right + a_only) * (b_only + both_wrong) * (both_right + b_only) * (a_only + both_wrong)
        # continuity-corrected φ (Newcombe's method 11 form): without it, ten identical answers give a
        # zero-width interval; with it, only many identical answers make the interval narrow
        n = both_right + a_only + b_only + both_wrong
        phi = max(both_right * both_wrong - a_only * b_only - n / 2, 0.0) / math.sqrt(den) if den > 0 else 0.0
    d = pa - pb
    down = math.sqrt(max(0.0, (pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2))
    up = math.sqrt(max(0.0, (ua - pa) ** 2 - 2 * phi * (ua - pa) * (pb - lb) + (pb - lb) ** 2))
    return DiffInterval(diff=d, low=d - down, high=d + up)


def items_needed(k_a: int, n_a: int, k_b: int, n_b: int, *, margin: float, alpha: float = 0.05,
                 power: float = POWER, discordant: int | None = None) -> int:
    """Items (per run; the same items for a paired design) that tell ±margin points with `power`:
    normal approximation from the observed accuracies (paired: the observed discordant share),
    each smoothed as (k + 1) / (n + 2) so a perfect score does not promise certainty."""
    from scipy import stats

    if discordant is not None:
        var = (discordant + 1) / (n_a + 2)  # variance of one item's paired difference, at most its discordance
    else:
        pa, pb = (k_a + 1) / (n_a + 2), (k_b + 1) / (n_b + 2)
        var = pa * (1 - pa) + pb * (1 - pb)
    z = stats.norm.ppf
    k = max(z(1 - alpha) + z(1 - (1 - power) / 2), z(1 - alpha / 2) + z(power))
    return min(MAX_NEEDED + 1, math.ceil(float(k) ** 2 * var / margin**2))
