"""Task packs (score per task, tokens and time per item) and the reasoning-effort sweep (what each effort level costs
and scores, the fastest level to a correct answer)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rigbench.analysis._metrics import e2e_latency_s
from rigbench.analysis._proportion import Proportion, proportion
from rigbench.analysis._stats import Stat, describe
from rigbench.records import OFF_LEVELS, Frozen, PackAnswer, PackConfig

__all__ = ["EffortLevel", "EffortSummary", "PackSummary", "PackTaskScore", "summarize_effort", "summarize_packs"]


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
        wall_s=describe([w for r in rows if (w := e2e_latency_s(r.result)) is not None]),
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
            wall_s_total=sum(w for r in rows if (w := e2e_latency_s(r.result)) is not None),
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
        w = e2e_latency_s(ok[0].result) if ok else None
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
        w = e2e_latency_s(r.result)
        t = r.result.completion_tokens
        if w and t:
            tok_s.append(t / w)
    return EffortLevel(
        effort=level, accuracy=proportion(sum(r.correct for r in rows), len(rows)),
        reasoning_tokens_total=None if any(x is None for x in rts) else sum(x for x in rts if x is not None),
        answer_tokens_total=None if any(x is None for x in ats) else sum(x for x in ats if x is not None),
        wall_s_total=sum(w for r in rows if (w := e2e_latency_s(r.result)) is not None),
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
