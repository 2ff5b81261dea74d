"""Stability of each speed series across repetitions: a change during the run, a one-off outlier, a
spread too wide to compare (docs/honesty.md, "Stability over repetitions"). A series is one figure of one
scenario at one concurrency level, one value per measured repetition (the median over the repetition's
requests; aggregate tok/s: the batch's own).

Every rule compares a series against its ordinary spread, sigma = max(1.4826 x its median absolute
deviation, QUIET_SPREAD x its median). At the default 5 repetitions a series' own spread cannot be
estimated (the MAD of 5 values is set by two of them, and a quiet run showed 4 "outliers" 2% from the
median by it), so the rules judge against the spread a quiet host shows between repetitions
(QUIET_SPREAD, calibrated by benchmarks/stability_calibration.py); a series whose own spread is wider
is judged against its own.

- change: the repetitions split in two runs of consecutive values (at least 2 each), every value of one
  part beyond every value of the other (of several such splits, the one that fits best: least absolute
  deviation from each part's median), and the medians further apart than CHANGE_Z standard errors of
  that difference (1.2533 sigma sqrt(1/a + 1/b), sigma here from each part's own deviations): another
  process started, the engine was throttled, the machine warmed up during the series.
- outlier: a value further than OUTLIER_Z sigma from the median: a one-off interruption (the first
  repetition alone slower: the engine was still warming up).
- unstable: a CV above UNSTABLE_CV beyond chance (chi-square test of the variance, at UNSTABLE_ALPHA):
  the figures move more between repetitions than a comparison of two rigs can see through.

One finding per series, the most specific: a change, else outliers, else unstable (a change or an
outlier widens the spread too). The rules are built so that a quiet host's default run (8 judged series at 5
repetitions) draws a warning in under 1 run in 100: simulated with the spreads quiet runs show (CVs up to
10.4%, root mean square 5.8%), 0.03% of runs; with every series at a normal 8% spread, 0.07%; only if every
series spread the whole 10% would it reach 1.6% (per series 0.2%). What that costs is the smallest effect each
rule can name at n repetitions (`detectable`), which the report states. With fewer than MIN_REPETITIONS values
nothing is judged.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
from pydantic import Field

from rigbench.analysis._timing import request_timing
from rigbench.records import Frozen, SpeedBatch, SpeedRequest

__all__ = ["CHANGE_Z", "MIN_REPETITIONS", "OUTLIER_Z", "QUIET_SPREAD", "UNSTABLE_ALPHA", "UNSTABLE_CV", "Detectable",
           "SeriesStability", "StabilityRules", "detectable", "judge_series", "speed_stability", "stability_warnings"]

# The spread between repetitions a quiet host shows, relative to the median: quiet runs of the embedded rig
# on 2 and 16 CPU cores and of llama.cpp on an H200 had per-series CVs of 0.1% to 10.4% (root mean square
# 5.8%; benchmarks/stability_calibration.py, docs/benchmarks.md "Stability calibration").
QUIET_SPREAD = 0.10
OUTLIER_Z = 4.0
CHANGE_Z = 3.5
UNSTABLE_CV = 0.10  # pyperf warns at a standard deviation of 10% of the mean
UNSTABLE_ALPHA = 0.001
MIN_REPETITIONS = 3  # fewer: the figures are shown, no warning is drawn from them
_MIN_PART = 2  # a change needs two values on each side; one value alone is an outlier
_MEDIAN_SE = math.sqrt(math.pi / 2)  # standard error of a median of normal values, per sigma / sqrt(n)

# series name -> (label in warnings, judged): TTFT of a fast server is a few ms and its CV mostly timer
# jitter, so it is shown, not warned about.
_SERIES = {"decode_tok_s": ("decode tok/s", True), "aggregate_tok_s": ("aggregate tok/s", True),
           "ttft_s": ("TTFT", False)}


class StabilityRules(NamedTuple):
    """The constants of the three rules, as one value a calibration can vary (`judge_series(rules=...)`)."""

    quiet_spread: float = QUIET_SPREAD
    outlier_z: float = OUTLIER_Z
    change_z: float = CHANGE_Z
    unstable_cv: float = UNSTABLE_CV
    unstable_alpha: float = UNSTABLE_ALPHA


DEFAULT_RULES = StabilityRules()


class Findings(NamedTuple):
    """What `judge_series` found in one series of values (indexes into the values, not repetition numbers)."""

    change_at: int | None  # the first value of the later part of a change
    change: float | None  # (median after - median before) / median before, when a change is named
    outliers: list[int]
    unstable: bool


class SeriesStability(Frozen):
    scenario: str
    concurrency: int
    series: str  # decode_tok_s | aggregate_tok_s | ttft_s
    values: list[float] = Field(default_factory=list)  # one per repetition, in repetition order
    repetitions: list[int] = Field(default_factory=list)  # their repetition numbers
    cv: float | None = None
    judged: bool = True  # a judged series with MIN_REPETITIONS values or more
    change_at: int | None = None  # the repetition number from which the series changed
    change: float | None = None  # relative change of the median from there on
    outliers: list[int] = Field(default_factory=list)  # repetition numbers of the outlying values
    unstable: bool = False

    @property
    def flagged(self) -> bool:
        return self.change is not None or bool(self.outliers) or self.unstable

    # A reader counts repetitions from 1; records number the measured ones from 0 (the warm-up is -1), so
    # "repetition 0 of 5" in a warning would name the first one as none of the five.
    @property
    def shown_change_at(self) -> int | None:
        return None if self.change_at is None else self.change_at + 1

    @property
    def shown_outliers(self) -> list[int]:
        return [r + 1 for r in self.outliers]


@functools.lru_cache(maxsize=256)
def _cv_bar(n: int, rules: StabilityRules) -> float:
    """The sample CV above which the true CV exceeds `unstable_cv` at `unstable_alpha` (n - 1 degrees of
    freedom: (n - 1) s^2 / sigma0^2 is chi-square under the null)."""
    from scipy.stats import chi2  # lazy: scipy.stats is heavy; only runs with repetitions need it

    return rules.unstable_cv * math.sqrt(float(chi2.ppf(1 - rules.unstable_alpha, n - 1)) / (n - 1))


def judge_series(values: Sequence[float], *, rules: StabilityRules = DEFAULT_RULES) -> Findings:
    """The three rules on one series, in order (module docstring). Fewer than MIN_REPETITIONS values, or a
    median that is not positive: nothing found. (Plain Python: a series is a handful of values, and the
    calibration judges millions of them.)"""
    x = [float(v) for v in values]
    n = len(x)
    med = statistics.median(x) if n else 0.0
    if n < MIN_REPETITIONS or not med > 0:
        return Findings(None, None, [], False)
    floor = rules.quiet_spread * med
    # a change: of the splits into two runs of consecutive values whose every value lies beyond every value of
    # the other, the one that fits best (least absolute deviation from each part's median), then tested
    best: tuple[float, int, float, float] | None = None
    for k in range(_MIN_PART, n - _MIN_PART + 1):
        a, b = x[:k], x[k:]
        if max(a) < min(b) or min(a) > max(b):
            ma, mb = statistics.median(a), statistics.median(b)
            misfit = sum(abs(v - ma) for v in a) + sum(abs(v - mb) for v in b)
            if best is None or misfit < best[0]:
                best = (misfit, k, ma, mb)
    if best is not None:
        _, k, ma, mb = best
        # each part's own deviations: the step does not widen sigma
        resid = [abs(v - ma) for v in x[:k]] + [abs(v - mb) for v in x[k:]]
        sigma = max(floor, 1.4826 * statistics.median(resid))
        if abs(mb - ma) > rules.change_z * _MEDIAN_SE * sigma * math.sqrt(1 / k + 1 / (n - k)):
            return Findings(k, (mb - ma) / ma, [], False)
    sigma = max(floor, 1.4826 * statistics.median([abs(v - med) for v in x]))
    outliers = [i for i, v in enumerate(x) if abs(v - med) > rules.outlier_z * sigma]
    if outliers:
        return Findings(None, None, outliers, False)
    mean = statistics.fmean(x)
    # sample standard deviation in floats (statistics.stdev is exact, in fractions: 3/4 of a calibration's time)
    cv = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1)) / mean if mean > 0 else 0.0
    return Findings(None, None, [], cv > _cv_bar(n, rules))


class Detectable(NamedTuple):
    """The smallest effect each rule can name at n repetitions, relative to the median, on a series whose
    own spread is no wider than a quiet host's (a wider one needs larger effects)."""

    n: int
    outlier: float | None  # one value this far from the median
    change: float | None  # a step of this size between the two halves
    cv: float | None  # a spread (CV) this wide


def detectable(n: int, *, rules: StabilityRules = DEFAULT_RULES) -> Detectable:
    if n < MIN_REPETITIONS:
        return Detectable(n, None, None, None)
    half = n // 2
    change = (rules.change_z * _MEDIAN_SE * rules.quiet_spread * math.sqrt(1 / half + 1 / (n - half))
              if n >= 2 * _MIN_PART else None)
    return Detectable(n, rules.outlier_z * rules.quiet_spread, change, _cv_bar(n, rules))


def _one(scenario: str, conc: int, series: str, by_rep: dict[int, float]) -> SeriesStability:
    reps = sorted(by_rep)
    vals = [by_rep[r] for r in reps]
    judged = _SERIES[series][1] and len(vals) >= MIN_REPETITIONS
    s = SeriesStability(scenario=scenario, concurrency=conc, series=series, values=vals, repetitions=reps,
                        judged=judged)
    if len(vals) < 2:
        return s
    arr = np.asarray(vals)
    mean = float(arr.mean())
    cv = float(arr.std(ddof=1) / mean) if mean > 0 else None
    if not judged:
        return s.model_copy(update={"cv": cv})
    f = judge_series(vals)
    return s.model_copy(update={"cv": cv, "change_at": reps[f.change_at] if f.change_at is not None else None,
                                "change": f.change, "outliers": [reps[i] for i in f.outliers],
                                "unstable": f.unstable})


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


def _names(group: list[SeriesStability]) -> str:
    return " and ".join(_SERIES[s.series][0] for s in group)


def _reps(reps: list[int]) -> str:
    return f"repetition{'s' if len(reps) > 1 else ''} {', '.join(str(r) for r in reps)}"


def stability_warnings(stab: list[SeriesStability]) -> list[str]:
    """A warning with its figures and remedy per window and finding (the series of one scenario and level
    that found the same thing share one warning)."""
    groups: dict[tuple[str, int, str, object], list[SeriesStability]] = defaultdict(list)
    for s in stab:
        if not s.judged or not s.flagged:
            continue
        kind, detail = (("change", (s.change_at, s.change > 0)) if s.change is not None
                        else ("outliers", tuple(s.outliers)) if s.outliers else ("unstable", None))
        groups[(s.scenario, s.concurrency, kind, detail)].append(s)
    out = []
    for (scenario, conc, kind, _), group in groups.items():
        first, n = group[0], len(group[0].values)
        where = f"{scenario} (c={conc}) {_names(group)}"
        if kind == "change" and first.change is not None:
            size = " and ".join(f"{abs(s.change):.0%}" for s in group if s.change is not None)
            out.append(f"Changed during the run: {where} {'rose' if first.change > 0 else 'fell'} {size} from "
                       f"repetition {first.shown_change_at} of {n} on, every later value beyond every earlier one: "
                       "something changed on the machine mid-series (another process, throttling, warming): "
                       "measure on a quiet host, with more warm-up (--warmup) if it rose")
        elif kind == "outliers":
            med = float(np.median(first.values))
            devs = [first.values[first.repetitions.index(r)] / med - 1 for r in first.outliers]
            size = ", ".join(f"{abs(d):.0%} {'below' if d < 0 else 'above'}" for d in devs)
            warming = first.outliers == [first.repetitions[0]] and devs[0] < 0
            cause = ("the first measured repetition alone was slow: the engine was still warming up; raise "
                     "--warmup" if warming else "a one-off interruption is likely: repeat the run, or raise "
                     "--repetitions so one value weighs less")
            # the spread the rule judged against (judge_series): the series' own, or a quiet host's if wider
            own = 1.4826 * float(np.median([abs(v - med) for v in first.values]))
            spread = ("the series' own spread" if own > QUIET_SPREAD * med else
                      f"the spread of a quiet host's repetitions ({QUIET_SPREAD:.0%} of the median)")
            out.append(f"Outlier: {where}: {_reps(first.shown_outliers)} of {n} {'is' if len(devs) == 1 else 'are'} "
                       f"{size} the median, over {OUTLIER_Z:g} times {spread}: {cause}")
        else:
            cvs = " and ".join(f"{s.cv:.0%}" for s in group if s.cv is not None)
            out.append(f"Unstable: {where}: CV {cvs} over {n} repetitions, above {UNSTABLE_CV:.0%} beyond chance "
                       f"(chi-square test, {1 - UNSTABLE_ALPHA:.1%}): comparisons need more repetitions: run on a "
                       "quiet host or raise --repetitions")
    return out
