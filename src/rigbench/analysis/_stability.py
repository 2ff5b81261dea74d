"""Stability of each speed series across repetitions: spread, drift and outliers (as pyperf and hyperfine
name them). A series is one figure of one scenario at one concurrency level, one value per measured
repetition (the median over the repetition's requests; aggregate tok/s: the batch's own).

- coefficient of variation (CV): sample standard deviation / mean. Above UNSTABLE_CV the figures
  move more between repetitions than a comparison of two rigs can see through (pyperf warns at 10%).
- drift: the second half of the repetitions against the first (medians), with Kendall's tau of value
  against repetition order as the trend test; flagged when the change is at least DRIFT_MIN and the
  trend is significant (p < DRIFT_P): the machine warmed, throttled or filled up during the run.
- outliers: values more than OUTLIER_Z robust standard deviations (1.4826 x the median absolute
  deviation) from the median (the modified z-score of Iglewicz and Hoaglin).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np
from pydantic import Field

from rigbench.analysis._timing import request_timing
from rigbench.records import Frozen, SpeedBatch, SpeedRequest

__all__ = ["DRIFT_MIN", "MIN_REPETITIONS", "OUTLIER_Z", "UNSTABLE_CV", "SeriesStability", "speed_stability", "stability_warnings"]

UNSTABLE_CV = 0.10
DRIFT_MIN = 0.05
DRIFT_P = 0.05
OUTLIER_Z = 3.5
MIN_REPETITIONS = 3  # fewer: the figures are shown, no warning is drawn from them

# series name -> (label in warnings, judged): TTFT of a fast server is a few ms and its CV mostly timer
# jitter, so it is shown, not warned about.
_SERIES = {"decode_tok_s": ("decode tok/s", True), "aggregate_tok_s": ("aggregate tok/s", True),
           "ttft_s": ("TTFT", False)}


class SeriesStability(Frozen):
    scenario: str
    concurrency: int
    series: str  # decode_tok_s | aggregate_tok_s | ttft_s
    values: list[float] = Field(default_factory=list)  # one per repetition, in repetition order
    cv: float | None = None
    drift: float | None = None  # (median of second half - median of first half) / median of first half
    trend_tau: float | None = None
    trend_p: float | None = None
    outliers: list[int] = Field(default_factory=list)  # repetition numbers of the outlying values
    judged: bool = True

    @property
    def unstable(self) -> bool:
        return self.judged and self.cv is not None and len(self.values) >= MIN_REPETITIONS and self.cv > UNSTABLE_CV

    @property
    def drifting(self) -> bool:
        return (self.judged and self.drift is not None and self.trend_p is not None and abs(self.drift) >= DRIFT_MIN
                and self.trend_p < DRIFT_P)


def _one(scenario: str, conc: int, series: str, by_rep: dict[int, float]) -> SeriesStability:
    reps = sorted(by_rep)
    vals = [by_rep[r] for r in reps]
    s = SeriesStability(scenario=scenario, concurrency=conc, series=series, values=vals, judged=_SERIES[series][1])
    if len(vals) < 2:
        return s
    arr = np.asarray(vals)
    mean = float(arr.mean())
    cv = float(arr.std(ddof=1) / mean) if mean > 0 else None
    drift = tau = p = None
    if len(vals) >= 4:
        half = len(vals) // 2
        first, second = float(np.median(arr[:half])), float(np.median(arr[-half:]))
        drift = (second - first) / first if first > 0 else None
        # lazy: scipy.stats is heavy and only the analysis of a run with repetitions needs it
        from scipy.stats import kendalltau

        res = kendalltau(np.arange(len(vals)), arr)
        if np.isfinite(res.statistic):
            tau, p = float(res.statistic), float(res.pvalue)
    outliers: list[int] = []
    if len(vals) >= 5:
        med = float(np.median(arr))
        mad = float(np.median(np.abs(arr - med)))
        if mad > 0:
            z = np.abs(arr - med) / (1.4826 * mad)
            outliers = [reps[i] for i in np.flatnonzero(z > OUTLIER_Z)]
    return s.model_copy(update={"cv": cv, "drift": drift, "trend_tau": tau, "trend_p": p, "outliers": outliers})


def speed_stability(requests: Iterable[SpeedRequest], batches: Iterable[SpeedBatch]) -> list[SeriesStability]:
    """One entry per scenario, concurrency level and series, over the measured (non-warm-up) repetitions."""
    per: dict[tuple[str, int, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    order: list[tuple[str, int]] = []
    done = {b.unit_id for b in batches if not b.warmup}
    for r in requests:
        if r.warmup or not r.result.ok or r.unit_id.rsplit("/", 1)[0] not in done:
            continue
        if (r.scenario, r.concurrency) not in order:
            order.append((r.scenario, r.concurrency))
        t = request_timing(r.result, output_tokens_target=r.output_tokens_target)
        cell = per[(r.scenario, r.concurrency, r.repetition)]
        if t.decode_tok_s is not None:
            cell["decode_tok_s"].append(t.decode_tok_s)
        if t.ttft_s is not None:
            cell["ttft_s"].append(t.ttft_s)
        cell["_tokens"].append(float(t.output_tokens))
    walls = {(b.scenario, b.concurrency, b.repetition): (b.ended_ns - b.started_ns) / 1e9 for b in batches
             if not b.warmup and b.ended_ns > b.started_ns}
    out: list[SeriesStability] = []
    for scenario, conc in order:
        reps = sorted(rep for (s, c, rep) in per if (s, c) == (scenario, conc))
        for series in _SERIES:
            by_rep: dict[int, float] = {}
            for rep in reps:
                cell = per[(scenario, conc, rep)]
                if series == "aggregate_tok_s":
                    wall = walls.get((scenario, conc, rep))
                    if wall and cell["_tokens"]:
                        by_rep[rep] = sum(cell["_tokens"]) / wall
                elif cell[series]:
                    by_rep[rep] = float(np.median(cell[series]))
            if by_rep:
                out.append(_one(scenario, conc, series, by_rep))
    return out


def stability_warnings(stab: list[SeriesStability]) -> list[str]:
    """A warning with its figures and remedy for each unstable, drifting or outlying series."""
    out = []
    for s in stab:
        name = f"{s.scenario} (c={s.concurrency}) {_SERIES[s.series][0]}"
        n = len(s.values)
        if s.unstable and s.cv is not None:
            out.append(f"Unstable: {name}: CV {s.cv:.0%} over {n} repetitions; run on a quiet host or raise "
                       "--repetitions")
        if s.drifting and s.drift is not None and s.trend_p is not None:
            out.append(f"Drift: {name} {'rose' if s.drift > 0 else 'fell'} {abs(s.drift):.0%} from the first half of "
                       f"the {n} repetitions to the second (Kendall tau {s.trend_tau:+.2f}, p {s.trend_p:.3f}); the "
                       "machine changed during the run (warming, throttling, other load): measure on a quiet host "
                       "with more warm-up (--warmup)")
        if s.judged and s.outliers:
            out.append(f"Outliers: {name}: repetition{'s' if len(s.outliers) > 1 else ''} "
                       f"{', '.join(str(r) for r in s.outliers)} of {n} lie over {OUTLIER_Z:g} robust deviations "
                       "(MAD) from the median; a one-off interruption is likely: repeat the run, or raise "
                       "--repetitions so one value weighs less")
    return out
