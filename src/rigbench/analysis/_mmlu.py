"""One run's MMLU-Pro: accuracy per subject and overall with Wilson intervals, against chance (an exact binomial
test), extraction failures (counted wrong, never a guess), tokens and time per question."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rigbench.analysis._metrics import e2e_latency_s
from rigbench.analysis._proportion import ALPHA, Proportion, proportion
from rigbench.analysis._stats import Stat, describe
from rigbench.records import Frozen, MMLUProAnswer, MMLUProConfig

__all__ = ["MMLUProSummary", "SubjectScore", "latest_answers", "summarize_mmlu_pro"]


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
    for a in latest_answers(answers):
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
        wall_s=describe([w for a in every if (w := e2e_latency_s(a.result)) is not None]),
        reasoning_forms=dict(Counter(a.reasoning_form for a in every)),
        missing_questions=missing, warnings=warnings,
    )


def latest_answers(answers: Sequence[MMLUProAnswer]) -> list[MMLUProAnswer]:
    """Last answer per question (a resumed run never re-asks, but be safe against duplicates)."""
    return list({a.question_id: a for a in answers}.values())
