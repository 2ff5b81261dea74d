"""Two rate-mode runs side by side at equal offered rate (`rigbench compare` on load runs).

At each rate the baseline measured, the other run's figure comes from its window at that rate (within
1%: "measured"), else by linear interpolation between its two nearest measured rates ("interpolated":
a sweep picks its rates from its own saturation, so two sweeps rarely share a rate), else none (the
rate lies outside the other's range). Interpolated figures are estimates and are labelled so; no
significance test is run on them. At a measured rate, response TTFT is compared with a Welch t-test
on the two windows' per-request summaries (analysis/_compare.py).
"""

from __future__ import annotations

from typing import Literal

from rigbench.analysis._compare import StatComparison, compare_stats
from rigbench.analysis._goodput import RateBound
from rigbench.analysis._load import LoadSummary, LoadWindowSummary
from rigbench.records import Frozen

__all__ = ["LoadComparison", "LoadRateComparison", "compare_load"]

_SAME_RATE = 0.01

Basis = Literal["measured", "interpolated", "out of range"]


class LoadRateComparison(Frozen):
    offered_rate_rps: float
    basis: Basis  # how the other run's figures at this rate were obtained
    baseline_throughput_rps: float
    other_throughput_rps: float | None
    baseline_goodput_rps: float | None
    other_goodput_rps: float | None
    baseline_ttft_p50_s: float | None  # response time, from the intended start
    other_ttft_p50_s: float | None
    baseline_e2e_p99_s: float | None
    other_e2e_p99_s: float | None
    ttft_test: StatComparison | None = None  # only at a measured rate


class LoadComparison(Frozen):
    rows: list[LoadRateComparison]
    baseline_knee: RateBound | None  # the knee as a bound (analysis/_goodput.py), or None: not a sweep, no SLO
    other_knee: RateBound | None
    baseline_saturation_rps: float | None
    other_saturation_rps: float | None


def _figures(w: LoadWindowSummary) -> tuple[float, float | None, float | None, float | None]:
    return (w.throughput_rps, w.slo.goodput_rps if w.slo else None,
            w.ttft_response_s.median if w.ttft_response_s else None,
            w.e2e_response_s.p99 if w.e2e_response_s else None)


def _lerp(a: float | None, b: float | None, t: float) -> float | None:
    return None if a is None or b is None else a + (b - a) * t


def compare_load(baseline: LoadSummary, other: LoadSummary, *, alpha: float = 0.05) -> LoadComparison:
    theirs = sorted((w for w in other.windows if w.mode == "rate" and w.offered_rate_rps), key=lambda w: w.offered_rate_rps or 0)
    rows: list[LoadRateComparison] = []
    for w in sorted(baseline.rates, key=lambda w: w.offered_rate_rps or 0):
        r = w.offered_rate_rps
        assert r is not None
        mine = _figures(w)
        same = next((o for o in theirs if abs((o.offered_rate_rps or 0) / r - 1) <= _SAME_RATE), None)
        test = None
        if same is not None:
            basis: Basis = "measured"
            got: tuple[float | None, ...] = _figures(same)
            if w.ttft_response_s is not None and same.ttft_response_s is not None:
                test = compare_stats(w.ttft_response_s, same.ttft_response_s, alpha=alpha)
        else:
            lo = [o for o in theirs if (o.offered_rate_rps or 0) < r]
            hi = [o for o in theirs if (o.offered_rate_rps or 0) > r]
            if lo and hi:
                a, b = lo[-1], hi[0]
                t = (r - (a.offered_rate_rps or 0)) / ((b.offered_rate_rps or 0) - (a.offered_rate_rps or 0))
                basis = "interpolated"
                got = tuple(_lerp(x, y, t) for x, y in zip(_figures(a), _figures(b), strict=True))
            else:
                basis, got = "out of range", (None, None, None, None)
        rows.append(LoadRateComparison(
            offered_rate_rps=r, basis=basis, baseline_throughput_rps=mine[0], other_throughput_rps=got[0],
            baseline_goodput_rps=mine[1], other_goodput_rps=got[1], baseline_ttft_p50_s=mine[2],
            other_ttft_p50_s=got[2], baseline_e2e_p99_s=mine[3], other_e2e_p99_s=got[3], ttft_test=test))
    sat_a, sat_b = baseline.saturation, other.saturation
    return LoadComparison(rows=rows, baseline_knee=baseline.knee, other_knee=other.knee,
                          baseline_saturation_rps=sat_a.throughput_rps if sat_a else None,
                          other_saturation_rps=sat_b.throughput_rps if sat_b else None)
