"""Quality figures from quality records: accuracy with standard error and CI, chance level,
extraction failures, tokens and time per question, cross-run comparison with significance tests,
task-pack and reasoning-effort summaries.

Statistics come from scipy: Wilson intervals (`binomtest(...).proportion_ci`), exact McNemar on
the discordant pairs when two runs asked the same questions (`binomtest(b, b + c, 0.5)`),
Fisher's exact test otherwise, for a difference; Newcombe's interval of the difference inside a
margin in points for "same" (`analysis/_verdict.py`). Extraction failures count as wrong, never
as a guess.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rigbench.analysis._stats import Stat, describe
from rigbench.analysis._verdict import (
    DEFAULT_MARGIN,
    Verdict,
    items_needed,
    proportion_diff_interval,
    three_way,
)
from rigbench.records import (
    OFF_LEVELS,
    Frozen,
    MMLUProAnswer,
    MMLUProConfig,
    PackAnswer,
    PackConfig,
    StreamResult,
)
from rigbench.store import RunReader

__all__ = [
    "ALPHA",
    "EffortLevel",
    "EffortSummary",
    "MMLUProComparison",
    "MMLUProSummary",
    "PackSummary",
    "PackTaskScore",
    "PairTest",
    "Proportion",
    "QualitySummary",
    "SubjectComparison",
    "SubjectScore",
    "compare_mmlu_pro",
    "pair_test",
    "proportion",
    "summarize_effort",
    "summarize_mmlu_pro",
    "summarize_packs",
    "summarize_quality",
]

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


def _wall_s(r: StreamResult) -> float | None:
    return (r.done_ns - r.sent_ns) / 1e9 if r.done_ns is not None else None


def _vs_chance(k: int, n: int, chance: float) -> float | None:
    """One-sided exact binomial p-value for "better than chance"."""
    if n == 0:
        return None
    from scipy import stats  # lazy: scipy.stats costs 1-2.5 s at start-up

    return float(stats.binomtest(k, n, chance, alternative="greater").pvalue)


# -- MMLU-Pro ---------------------------------------------------------------------------------


class SubjectScore(Frozen):
    subject: str
    accuracy: Proportion
    chance: float  # mean of 1 / options over the questions asked
    extraction_failures: int  # no letter found in the answer (scored wrong)
    request_failures: int  # the server gave no usable response (scored wrong)


class MMLUProSummary(Frozen):
    run_id: str
    dataset: str | None
    sample_seed: int | None
    questions_per_subject: int | None
    protocol: str | None
    subjects: list[SubjectScore]
    overall: Proportion
    chance: float
    better_than_chance_p: float | None  # one-sided exact binomial test vs `chance`
    better_than_chance: bool
    extraction_failure_rate: float
    extraction_by_pattern: dict[str, int]  # pattern1/2/3/failed/request_failed -> count
    truncated: int  # finish_reason "length": the answer may be cut off
    completion_tokens: Stat | None  # per question
    reasoning_tokens: Stat | None
    answer_tokens: Stat | None
    wall_s: Stat | None  # per question, request sent -> stream end
    reasoning_forms: dict[str, int]
    missing_questions: int  # sampled in the config but not answered (an interrupted run)
    warnings: list[str]


def summarize_mmlu_pro(run_id: str, answers: Sequence[MMLUProAnswer],
                       config: MMLUProConfig | None = None) -> MMLUProSummary | None:
    if not answers:
        return None
    by_subject: dict[str, list[MMLUProAnswer]] = {}
    for a in _dedupe(answers):
        by_subject.setdefault(a.subject, []).append(a)
    subjects = []
    for subject in sorted(by_subject):
        rows = by_subject[subject]
        subjects.append(SubjectScore(
            subject=subject, accuracy=proportion(sum(a.correct for a in rows), len(rows)),
            chance=sum(1 / a.n_options for a in rows) / len(rows),
            extraction_failures=sum(a.extraction == "failed" for a in rows),
            request_failures=sum(a.extraction == "request_failed" for a in rows),
        ))
    every = [a for rows in by_subject.values() for a in rows]
    n = len(every)
    k = sum(a.correct for a in every)
    chance = sum(1 / a.n_options for a in every) / n
    p_chance = _vs_chance(k, n, chance)
    by_pattern = Counter(a.extraction for a in every)
    warnings: list[str] = []
    better = p_chance is not None and p_chance < ALPHA
    if not better:
        warnings.append(f"overall accuracy is not significantly above chance ({chance:.1%}); "
                        "these scores say the model is guessing")
    small = [s.subject for s in subjects if s.accuracy.n < 100]
    if small:
        warnings.append(f"{len(small)} subject(s) have fewer than 100 questions: one standard error is "
                        f"{max(s.accuracy.se for s in subjects if s.accuracy.n < 100):.0%} or more; "
                        "do not read single-subject differences (raise questions_per_subject)")
    fail_rate = by_pattern.get("failed", 0) / n
    if fail_rate > 0.05:
        warnings.append(f"{fail_rate:.0%} of answers had no extractable letter (scored wrong): the model "
                        "does not follow the 'The answer is (X)' format")
    truncated = sum(a.result.finish_reason == "length" for a in every)
    if truncated:
        warnings.append(f"{truncated} answer(s) hit max_tokens (finish_reason 'length')")
    missing = 0
    if config is not None:
        asked = {a.question_id for a in every}
        missing = sum(qid not in asked for ids in config.question_ids.values() for qid in ids)
        if missing:
            warnings.append(f"{missing} sampled question(s) were never answered (interrupted run?); "
                            "resume the run to complete it")
    return MMLUProSummary(
        run_id=run_id, dataset=config.dataset if config else None,
        sample_seed=config.sample_seed if config else None,
        questions_per_subject=config.questions_per_subject if config else None,
        protocol=config.protocol if config else None,
        subjects=subjects, overall=proportion(k, n), chance=chance, better_than_chance_p=p_chance,
        better_than_chance=better, extraction_failure_rate=fail_rate,
        extraction_by_pattern=dict(sorted(by_pattern.items())), truncated=truncated,
        completion_tokens=describe([t for a in every if (t := a.result.completion_tokens) is not None]),
        reasoning_tokens=describe([a.reasoning_tokens for a in every if a.reasoning_tokens is not None]),
        answer_tokens=describe([a.answer_tokens for a in every if a.answer_tokens is not None]),
        wall_s=describe([w for a in every if (w := _wall_s(a.result)) is not None]),
        reasoning_forms=dict(Counter(a.reasoning_form for a in every)),
        missing_questions=missing, warnings=warnings,
    )


def _dedupe(answers: Sequence[MMLUProAnswer]) -> list[MMLUProAnswer]:
    """Last answer per question (a resumed run never re-asks, but be safe against duplicates)."""
    return list({a.question_id: a for a in answers}.values())


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
    data = {rid: _dedupe(ans) for rid, ans in runs}
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


# -- task packs and the effort sweep ------------------------------------------------------------


class PackTaskScore(Frozen):
    task_id: str
    language: str
    accuracy: Proportion  # over repetitions
    failed_graders: dict[str, int]  # grader -> how many repetitions it failed
    first_failure: str | None  # the detail of one failure, as evidence
    wall_s: Stat | None
    reasoning_tokens: Stat | None
    answer_tokens: Stat | None
    answer_chars: Stat | None


class PackSummary(Frozen):
    run_id: str
    pack: str
    pack_sha256: str | None
    tasks: list[PackTaskScore]
    overall: Proportion
    wall_s_total: float
    request_failures: int
    unconfined_grades: int = 0  # code grades run without the sandbox (--allow-unconfined)


def _task_score(task_id: str, rows: list[PackAnswer]) -> PackTaskScore:
    failed: Counter[str] = Counter()
    first: str | None = None
    for r in rows:
        if not r.result.ok:
            failed["request"] += 1
            first = first or (r.result.error.message if r.result.error else "request failed")
        for g in r.grades:
            if not g.passed:
                failed[g.grader] += 1
                first = first or f"{g.grader}: {g.detail}"
    return PackTaskScore(
        task_id=task_id, language=rows[0].language,
        accuracy=proportion(sum(r.correct for r in rows), len(rows)),
        failed_graders=dict(failed), first_failure=first,
        wall_s=describe([w for r in rows if (w := _wall_s(r.result)) is not None]),
        reasoning_tokens=describe([r.reasoning_tokens for r in rows if r.reasoning_tokens is not None]),
        answer_tokens=describe([r.answer_tokens for r in rows if r.answer_tokens is not None]),
        answer_chars=describe([r.answer_chars for r in rows]),
    )


def summarize_packs(run_id: str, answers: Sequence[PackAnswer],
                    configs: Sequence[PackConfig] = ()) -> list[PackSummary]:
    out = []
    shas = {c.pack: c.pack_sha256 for c in configs if c.suite == "packs"}
    packs = sorted({a.pack for a in answers if a.suite == "packs"})
    for pack in packs:
        rows = [a for a in answers if a.suite == "packs" and a.pack == pack]
        by_task: dict[str, list[PackAnswer]] = {}
        for r in rows:
            by_task.setdefault(r.task_id, []).append(r)
        out.append(PackSummary(
            run_id=run_id, pack=pack, pack_sha256=shas.get(pack),
            tasks=[_task_score(t, rs) for t, rs in by_task.items()],
            overall=proportion(sum(r.correct for r in rows), len(rows)),
            wall_s_total=sum(w for r in rows if (w := _wall_s(r.result)) is not None),
            request_failures=sum(not r.result.ok for r in rows),
            unconfined_grades=sum(g.confinement == "unconfined" for r in rows for g in r.grades),
        ))
    return out


class EffortLevel(Frozen):
    effort: str
    accuracy: Proportion
    reasoning_tokens_total: int | None  # None: the server reported no token counts
    answer_tokens_total: int | None
    wall_s_total: float  # every request at this level, one after another
    # Time to correct answer: per task, the wall time of its first correct repetition, summed;
    # None when some task was never answered correctly at this level.
    time_to_correct_s: float | None
    tasks_never_correct: list[str]
    e2e_tok_s: Stat | None  # per request: output tokens / wall time (the "speed" next to it)
    thinking_observed: bool  # any reasoning text or reasoning tokens at this level
    off_requested: bool  # the level asks for no thinking ("none"/"off")
    off_honoured: bool | None  # None unless off was requested
    reasoning_forms: dict[str, int]
    request_failures: int
    request_fields: dict[str, object]  # what was sent for this level


class EffortSummary(Frozen):
    run_id: str
    pack: str
    engine: str | None
    levels: list[EffortLevel]
    fastest_to_correct: str | None  # the level with the least time to correct answer
    warnings: list[str]


def _effort_level(level: str, rows: list[PackAnswer], fields: dict[str, object]) -> EffortLevel:
    by_task: dict[str, list[PackAnswer]] = {}
    for r in rows:
        by_task.setdefault(r.task_id, []).append(r)
    ttc = 0.0
    never: list[str] = []
    for task_id, rs in by_task.items():
        ok = sorted((r for r in rs if r.correct), key=lambda r: r.repetition)
        w = _wall_s(ok[0].result) if ok else None
        if w is None:
            never.append(task_id)
        else:
            ttc += w
    rts = [r.reasoning_tokens for r in rows]
    ats = [r.answer_tokens for r in rows]
    thinking = any((r.reasoning_tokens or 0) > 0 or r.reasoning_form != "none" for r in rows)
    off = level in OFF_LEVELS
    tok_s = []
    for r in rows:
        w = _wall_s(r.result)
        t = r.result.completion_tokens
        if w and t:
            tok_s.append(t / w)
    return EffortLevel(
        effort=level, accuracy=proportion(sum(r.correct for r in rows), len(rows)),
        reasoning_tokens_total=None if any(x is None for x in rts) else sum(x for x in rts if x is not None),
        answer_tokens_total=None if any(x is None for x in ats) else sum(x for x in ats if x is not None),
        wall_s_total=sum(w for r in rows if (w := _wall_s(r.result)) is not None),
        time_to_correct_s=None if never else ttc, tasks_never_correct=sorted(never),
        e2e_tok_s=describe(tok_s), thinking_observed=thinking, off_requested=off,
        off_honoured=(not thinking) if off else None,
        reasoning_forms=dict(Counter(r.reasoning_form for r in rows)),
        request_failures=sum(not r.result.ok for r in rows), request_fields=fields,
    )


def summarize_effort(run_id: str, answers: Sequence[PackAnswer],
                     configs: Sequence[PackConfig] = ()) -> list[EffortSummary]:
    out = []
    rows_all = [a for a in answers if a.suite == "effort"]
    for pack in sorted({a.pack for a in rows_all}):
        cfg = next((c for c in configs if c.suite == "effort" and c.pack == pack), None)
        rows = [a for a in rows_all if a.pack == pack]
        order = cfg.efforts if cfg else sorted({str(a.effort) for a in rows})
        knobs: dict[str, dict[str, object]] = {k: dict(v) for k, v in cfg.knobs.items()} if cfg else {}
        levels = [_effort_level(lv, [r for r in rows if r.effort == lv], knobs.get(lv, {}))
                  for lv in order if any(r.effort == lv for r in rows)]
        warnings = []
        for lv in levels:
            if lv.off_requested and not lv.off_honoured:
                warnings.append(f"thinking did not turn off at effort {lv.effort!r}: reasoning was produced "
                                f"({lv.reasoning_tokens_total} reasoning tokens) despite {lv.request_fields}")
            if lv.request_failures:
                warnings.append(f"effort {lv.effort!r}: {lv.request_failures} request(s) failed; the server "
                                "may not accept this level")
        unconfined = sum(g.confinement == "unconfined" for r in rows for g in r.grades)
        if unconfined:
            warnings.append(f"{unconfined} code grade(s) ran unconfined (--allow-unconfined): the model's code "
                            "could read and write this machine and reach the network")
        reps = {r.repetition for r in rows}
        if len(reps) < 3:
            warnings.append("one repetition per level: differences between levels below ~20% of wall time "
                            "are within single-run noise (set repetitions >= 3)")
        timed = [lv for lv in levels if lv.time_to_correct_s is not None]
        fastest = min(timed, key=lambda lv: lv.time_to_correct_s or 0.0).effort if timed else None
        out.append(EffortSummary(run_id=run_id, pack=pack, engine=cfg.engine if cfg else None, levels=levels,
                                 fastest_to_correct=fastest, warnings=warnings))
    return out


class QualitySummary(Frozen):
    """Everything quality in one run, for the report."""

    run_id: str
    mmlu_pro: MMLUProSummary | None
    packs: list[PackSummary]
    effort: list[EffortSummary]

    @property
    def empty(self) -> bool:
        return self.mmlu_pro is None and not self.packs and not self.effort


def summarize_quality(reader: RunReader) -> QualitySummary:
    run_id = reader.header.run_id
    answers = reader.records("mmlu_pro_answer", MMLUProAnswer)
    configs = reader.records("mmlu_pro_config", MMLUProConfig)
    pack_answers = reader.records("pack_answer", PackAnswer)
    pack_configs = reader.records("pack_config", PackConfig)
    return QualitySummary(
        run_id=run_id,
        mmlu_pro=summarize_mmlu_pro(run_id, answers, configs[-1] if configs else None),
        packs=summarize_packs(run_id, pack_answers, pack_configs),
        effort=summarize_effort(run_id, pack_answers, pack_configs),
    )
