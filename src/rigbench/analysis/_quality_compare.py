"""MMLU-Pro across runs, subject by subject: exact McNemar on the discordant pairs when two runs asked the same
questions (`binomtest(b, b + c, 0.5)`), Fisher's exact test otherwise, for a difference; Newcombe's interval of the
difference inside a margin in points for "same" (`analysis/_verdict.py`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rigbench.analysis._mmlu import latest_answers
from rigbench.analysis._proportion import ALPHA, Proportion, proportion
from rigbench.analysis._verdict import (
    DEFAULT_MARGIN,
    Verdict,
    items_needed,
    proportion_diff_interval,
    three_way,
)
from rigbench.records import Frozen, MMLUProAnswer

__all__ = ["MMLUProComparison", "PairTest", "SubjectComparison", "compare_mmlu_pro", "pair_test"]


class PairTest(Frozen):
    """Is run A different from run B on this subject (or "overall")?"""

    subject: str
    run_a: str
    run_b: str
    diff: float  # accuracy A - accuracy B (on the paired questions when paired)
    test: Literal["mcnemar_exact", "fisher_exact"]
    n: int  # paired questions, or total answers for Fisher
    a_only: int | None  # paired: questions A got right and B wrong
    b_only: int | None
    p_value: float
    significant: bool
    # equivalence (analysis/_verdict.py): the 1 − 2α interval of `diff` inside ±margin points
    verdict: Verdict = "inconclusive"
    margin: float = DEFAULT_MARGIN  # as a fraction: 0.05 is ±5 points
    diff_low: float | None = None  # 90% interval of diff (Newcombe; paired when paired)
    diff_high: float | None = None
    needed_n: int | None = None  # inconclusive: items (per run) that would tell ±margin (80% power)


class SubjectComparison(Frozen):
    subject: str
    accuracy: dict[str, Proportion]  # run id -> accuracy
    vs_best: dict[str, float]  # run id -> its accuracy minus the best *other* run's
    vs_worst: dict[str, float]  # run id -> its accuracy minus the worst other run's
    chance: float


class MMLUProComparison(Frozen):
    runs: list[str]
    subjects: list[SubjectComparison]  # "overall" last
    tests: list[PairTest]


def _pair_test(subject: str, ida: str, a: list[MMLUProAnswer], idb: str,
               b: list[MMLUProAnswer], margin: float) -> PairTest:
    return pair_test(subject, ida, {x.question_id: x.correct for x in a}, idb, {x.question_id: x.correct for x in b},
                     margin=margin)


def pair_test(subject: str, ida: str, ma: Mapping[Any, bool], idb: str, mb: Mapping[Any, bool], *,
              margin: float = DEFAULT_MARGIN) -> PairTest:
    """Exact McNemar on the items both runs answered when they mostly share items, else Fisher's
    exact test on the two proportions, for a difference; the 1 − 2α Newcombe interval of the
    difference inside ±margin for "same" (paired likewise). `ma`, `mb`: item id -> correct."""
    from scipy import stats  # lazy: scipy.stats costs 1-2.5 s at start-up

    common = sorted(set(ma) & set(mb))
    if len(common) >= max(len(ma), len(mb)) // 2 and common:
        a_only = sum(ma[q] and not mb[q] for q in common)
        b_only = sum(mb[q] and not ma[q] for q in common)
        both = sum(ma[q] and mb[q] for q in common)
        n = len(common)
        p = 1.0 if a_only + b_only == 0 else float(stats.binomtest(a_only, a_only + b_only, 0.5).pvalue)
        ci = proportion_diff_interval(both + a_only, n, both + b_only, n, confidence=1 - 2 * ALPHA,
                                      both_right=both, both_wrong=n - both - a_only - b_only)
        return _with_verdict(PairTest(subject=subject, run_a=ida, run_b=idb, diff=ci.diff, test="mcnemar_exact",
                                      n=n, a_only=a_only, b_only=b_only, p_value=p, significant=p < ALPHA,
                                      margin=margin, diff_low=ci.low, diff_high=ci.high),
                             items_needed(both + a_only, n, both + b_only, n, margin=margin, alpha=ALPHA,
                                          discordant=a_only + b_only))
    ka, na, kb, nb = sum(ma.values()), len(ma), sum(mb.values()), len(mb)
    p = float(stats.fisher_exact([[ka, na - ka], [kb, nb - kb]]).pvalue)
    ci = proportion_diff_interval(ka, na, kb, nb, confidence=1 - 2 * ALPHA)
    return _with_verdict(PairTest(subject=subject, run_a=ida, run_b=idb, diff=ci.diff, test="fisher_exact",
                                  n=na + nb, a_only=None, b_only=None, p_value=p, significant=p < ALPHA,
                                  margin=margin, diff_low=ci.low, diff_high=ci.high),
                         items_needed(ka, na, kb, nb, margin=margin, alpha=ALPHA))


def _with_verdict(t: PairTest, needed: int) -> PairTest:
    assert t.diff_low is not None and t.diff_high is not None
    same = -t.margin < t.diff_low and t.diff_high < t.margin
    verdict = three_way(significant=t.significant, equivalent=same)
    return t.model_copy(update={"verdict": verdict, "needed_n": needed if verdict == "inconclusive" else None})


def compare_mmlu_pro(runs: Sequence[tuple[str, Sequence[MMLUProAnswer]]], *,
                     margin: float = DEFAULT_MARGIN) -> MMLUProComparison:
    """Per subject and overall: accuracy per run, vs best / vs worst, and a test per pair.

    The test is exact McNemar on the questions both runs answered when they mostly share
    questions (same sample seed), else Fisher's exact test on the two proportions.
    """
    ids = [rid for rid, _ in runs]
    data = {rid: latest_answers(ans) for rid, ans in runs}
    all_subjects = sorted({a.subject for ans in data.values() for a in ans})
    rows: list[SubjectComparison] = []
    tests: list[PairTest] = []
    for subject in [*all_subjects, "overall"]:
        sub = {rid: [a for a in ans if subject == "overall" or a.subject == subject]
               for rid, ans in data.items()}
        present = [rid for rid in ids if sub[rid]]
        acc = {rid: proportion(sum(a.correct for a in sub[rid]), len(sub[rid])) for rid in present}
        vs_best: dict[str, float] = {}
        vs_worst: dict[str, float] = {}
        for rid in present:
            others = [acc[o].p for o in present if o != rid]
            if others:
                vs_best[rid] = acc[rid].p - max(others)
                vs_worst[rid] = acc[rid].p - min(others)
        every = [a for rid in present for a in sub[rid]]
        chance = sum(1 / a.n_options for a in every) / len(every) if every else math.nan
        rows.append(SubjectComparison(subject=subject, accuracy=acc, vs_best=vs_best, vs_worst=vs_worst,
                                      chance=chance))
        for i, ra in enumerate(present):
            for rb in present[i + 1:]:
                tests.append(_pair_test(subject, ra, sub[ra], rb, sub[rb], margin))
    return MMLUProComparison(runs=ids, subjects=rows, tests=tests)
