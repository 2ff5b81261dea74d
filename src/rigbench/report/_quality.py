"""Quality tables (MMLU-Pro, task packs, effort sweep, cross-run comparison) for the terminal and
Markdown. Both renderings come from the same cells; no statistics here, only formatting.
"""

from __future__ import annotations

import math

from rich.console import Console

from rigbench.analysis import (
    EffortSummary,
    MMLUProComparison,
    MMLUProSummary,
    PackSummary,
    Proportion,
    QualitySummary,
    Stat,
)
from rigbench.report._cells import Note, Section, section_markdown, section_terminal
from rigbench.report._fmt import verdict_cell

__all__ = [
    "quality_sections",
    "render_mmlu_comparison_markdown",
    "render_mmlu_comparison_terminal",
    "render_quality_markdown",
    "render_quality_terminal",
]


def _notes(texts: list[str]) -> list[Note]:
    return [Note(t, "warn" if t.startswith("Warning") else None) for t in texts]


def _pct(p: float) -> str:
    return "–" if math.isnan(p) else f"{p * 100:.1f}%"


def _acc(p: Proportion) -> str:
    """'74.9% ± 3.1' : accuracy with one standard error, in points."""
    if p.n == 0:
        return "–"
    return f"{p.p * 100:.1f}% ± {p.se * 100:.1f}"


def _pts(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "–"
    return f"{x * 100:+.1f}".replace("-", "−")


def _med(s: Stat | None, digits: int = 0) -> str:
    if s is None or s.n == 0:
        return "–"
    return f"{s.median:.{digits}f}"


def _mmlu(s: MMLUProSummary) -> Section:
    head = ["subject", "n", "accuracy ± SE", "95% CI", "chance", "no letter", "failed req"]
    rows = [[x.subject, str(x.accuracy.n), _acc(x.accuracy),
             f"{_pct(x.accuracy.ci_low)}–{_pct(x.accuracy.ci_high)}", _pct(x.chance),
             str(x.extraction_failures), str(x.request_failures)] for x in s.subjects]
    o = s.overall
    rows.append(["overall", str(o.n), _acc(o), f"{_pct(o.ci_low)}–{_pct(o.ci_high)}", _pct(s.chance),
                 str(s.extraction_by_pattern.get("failed", 0)),
                 str(s.extraction_by_pattern.get("request_failed", 0))])
    verdict = ("above chance" if s.better_than_chance else "NOT above chance: the model is guessing")
    notes = [
        f"Chance level is {_pct(s.chance)} (1 in the number of options); overall {verdict} "
        f"(one-sided exact binomial p = {s.better_than_chance_p:.3g}).",
        f"Extraction failures: {s.extraction_failure_rate:.1%} of answers had no letter; scored wrong, "
        "never guessed. Letters found by pattern: "
        + ", ".join(f"{k} {v}" for k, v in s.extraction_by_pattern.items()) + ".",
        f"Per question (median): {_med(s.completion_tokens)} output tokens "
        f"({_med(s.reasoning_tokens)} reasoning, {_med(s.answer_tokens)} answer), "
        f"{_med(s.wall_s, 1)} s wall. Reasoning form: "
        + ", ".join(f"{k} {v}" for k, v in s.reasoning_forms.items()) + ".",
    ]
    if s.dataset:
        notes.append(f"Data {s.dataset}, sample seed {s.sample_seed}, "
                     f"{s.questions_per_subject or 'all'} questions per subject; protocol {s.protocol}.")
    notes += [f"Warning: {w}" for w in s.warnings]
    return Section("MMLU-Pro (accuracy ± one standard error, in points)", head, rows, _notes(notes))


def _pack(p: PackSummary) -> Section:
    head = ["task", "lang", "correct", "failed graders", "wall s", "reasoning tok", "answer tok", "chars"]
    rows = []
    for t in p.tasks:
        failed = ", ".join(f"{g} {n}" for g, n in t.failed_graders.items()) or "–"
        rows.append([t.task_id, t.language, f"{t.accuracy.k}/{t.accuracy.n}", failed, _med(t.wall_s, 2),
                     _med(t.reasoning_tokens), _med(t.answer_tokens), _med(t.answer_chars)])
    rows.append(["all", "", f"{p.overall.k}/{p.overall.n}", "", f"{p.wall_s_total:.2f}", "", "", ""])
    notes = [f"{t.task_id}: {t.first_failure}" for t in p.tasks if t.first_failure]
    if p.request_failures:
        notes.append(f"Warning: {p.request_failures} request(s) failed (counted wrong).")
    if p.unconfined_grades:
        notes.append(f"Warning: {p.unconfined_grades} code grade(s) ran unconfined (--allow-unconfined): the "
                     "model's code could read and write this machine and reach the network.")
    return Section(f"Task pack {p.pack} (medians over repetitions)", head, rows, _notes(notes), left_cols=4)


def _effort(e: EffortSummary) -> Section:
    head = ["effort", "correct", "reasoning tok", "answer tok", "wall s", "time to correct s",
            "e2e tok/s", "thinking"]
    rows = []
    for lv in e.levels:
        thinking = "yes" if lv.thinking_observed else "no"
        if lv.off_requested:
            thinking += " (off asked: " + ("honoured)" if lv.off_honoured else "IGNORED)")
        ttc = f"{lv.time_to_correct_s:.2f}" if lv.time_to_correct_s is not None else \
            f"– ({len(lv.tasks_never_correct)} never correct)"
        rows.append([lv.effort, f"{lv.accuracy.k}/{lv.accuracy.n}",
                     "–" if lv.reasoning_tokens_total is None else str(lv.reasoning_tokens_total),
                     "–" if lv.answer_tokens_total is None else str(lv.answer_tokens_total),
                     f"{lv.wall_s_total:.2f}", ttc, _med(lv.e2e_tok_s, 1), thinking])
    notes = ["Time to correct answer: per task, the wall time of its first correct answer, summed. "
             "It can rank levels differently from tok/s: thinking less can finish first."]
    if e.fastest_to_correct:
        notes.append(f"Fastest to a correct answer on every task: {e.fastest_to_correct}.")
    notes += [f"Warning: {w}" for w in e.warnings]
    title = f"Reasoning-effort sweep, pack {e.pack} (engine {e.engine or 'unknown'})"
    return Section(title, head, rows, _notes(notes))


def quality_sections(summary: QualitySummary) -> list[Section]:
    out = []
    if summary.mmlu_pro is not None:
        out.append(_mmlu(summary.mmlu_pro))
    out += [_pack(p) for p in summary.packs]
    out += [_effort(e) for e in summary.effort]
    return out


def _comparison(c: MMLUProComparison) -> list[Section]:
    head = ["subject"] + [f"{r} acc ± SE" for r in c.runs] + [f"{r} vs best" for r in c.runs] \
        + [f"{r} vs worst" for r in c.runs] + ["chance"]
    rows = []
    for s in c.subjects:
        acc = s.accuracy
        rows.append([s.subject] + [_acc(acc[r]) + f" (n={acc[r].n})" if r in acc else "–" for r in c.runs]
                    + [_pts(s.vs_best.get(r)) for r in c.runs] + [_pts(s.vs_worst.get(r)) for r in c.runs]
                    + [_pct(s.chance)])
    t_head = ["subject", "A", "B", "A − B", "test", "n", "A only / B only", "p", "verdict"]
    t_rows = [[t.subject, t.run_a, t.run_b, _pts(t.diff), t.test, str(t.n),
               f"{t.a_only} / {t.b_only}" if t.a_only is not None else "–", f"{t.p_value:.3g}",
               verdict_cell(t.verdict, t.margin, t.needed_n, unit=" pts")] for t in c.tests]
    return [
        Section("MMLU-Pro across runs (vs best / vs worst: points against the best / worst other run)",
                 head, rows),
        Section("MMLU-Pro pairwise tests (exact McNemar when the same questions were asked, else Fisher; "
                 "alpha 0.05)", t_head, t_rows,
                 [Note("same ±M pts: the 90% interval of A − B (Newcombe, paired when the same questions were "
                       "asked) lies within ±M points; differs: p < 0.05; inconclusive, ~N/side: neither, and "
                       "about N questions per run would tell (80% power); it does not mean equal.")],
                 left_cols=3),
    ]


def _render(console: Console, sections: list[Section]) -> None:
    for sec in sections:
        section_terminal(console, sec)
        console.print()


def render_quality_terminal(console: Console, summary: QualitySummary) -> None:
    """Print every quality table of one run (nothing when the run has no quality records)."""
    _render(console, quality_sections(summary))


def render_quality_markdown(summary: QualitySummary) -> str:
    return "\n\n".join(section_markdown(s) for s in quality_sections(summary))


def render_mmlu_comparison_terminal(console: Console, comparison: MMLUProComparison) -> None:
    _render(console, _comparison(comparison))


def render_mmlu_comparison_markdown(comparison: MMLUProComparison) -> str:
    return "\n\n".join(section_markdown(s) for s in _comparison(comparison))
