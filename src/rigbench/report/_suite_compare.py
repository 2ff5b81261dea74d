"""Quality and agent comparisons of two runs (MMLU-Pro per subject, task packs, tool calls, BFCL,
probes, multi-turn tasks) for the terminal and Markdown, each difference with its test. The cells
are built once; both renderings use them. Formatting only: the tests come from analysis.
"""

from __future__ import annotations

import math

from rich.console import Console

from rigbench.analysis import AccuracyDiff, PairTest, Proportion, SuiteComparison
from rigbench.report._cells import Cell, Note, Section, section_markdown, section_terminal
from rigbench.report._fmt import verdict_cell, verdict_sentence

__all__ = ["NOT_SIGNIFICANT_NOTE", "suite_comparison_markdown", "suite_comparison_sections",
           "suite_comparison_terminal"]

_TESTS = "p: exact McNemar on the items both answered (F: Fisher's exact test otherwise); α = 0.05"
_NS = ("same ±M pts: the 90% interval of B − A (Newcombe, paired when the items are shared) lies within ±M "
       "points; differs: p < 0.05; inconclusive: neither, and the data cannot tell the two apart, which is not "
       "the same as equal.")


def _acc(p: Proportion) -> str:
    return "–" if p.n == 0 or math.isnan(p.p) else f"{p.p * 100:.1f}% ± {p.se * 100:.1f}"


def _pts(x: float) -> str:
    return f"{x * 100 + 0.0:+.1f}".replace("-", "−").replace("−0.0", "+0.0")  # no negative zero


def _verdict(t: PairTest) -> str | Cell:
    text = verdict_cell(t.verdict, t.margin, None, unit=" pts")
    return Cell(text, "notable") if t.verdict == "differs" else text


def _undecided(name: str, t: PairTest) -> Note | None:
    if t.verdict != "inconclusive":
        return None
    per = "items" if t.test == "mcnemar_exact" else "items per run"
    return Note(f"{name}: " + verdict_sentence("inconclusive", t.margin, t.needed_n, unit=" pts", per=per), level=1)


def _test_cells(t: PairTest, diff: float) -> list[str | Cell]:
    return [_pts(diff), f"{t.p_value:.3g}" + (" F" if t.test == "fisher_exact" else ""), _verdict(t)]


def _head(first: str) -> list[str]:
    return [first, "n", "A", "B", "B − A pts", "p", "verdict"]


def _mmlu(c: SuiteComparison, a: str, b: str) -> Section | None:
    m = c.mmlu_pro
    if m is None:
        return None
    rows: list[list[str | Cell]] = []
    notes: list[Note] = []
    for s in m.subjects:
        t = next((t for t in m.tests if t.subject == s.subject), None)
        pa, pb = s.accuracy.get(c.baseline_run), s.accuracy.get(c.other_run)
        if t is None or pa is None or pb is None:
            continue
        diff = t.diff if t.run_a == c.other_run else -t.diff  # B − A
        rows.append([s.subject, str(t.n), _acc(pa), _acc(pb), *_test_cells(t, diff)])
        notes += [n for n in [_undecided(s.subject, t)] if n is not None]
    return Section(f"MMLU-Pro: B = {b} vs A = {a} (accuracy ± SE; {_TESTS})", _head("subject"), rows, notes,
                   left_cols=1)


def _graded(title: str, diffs: list[AccuracyDiff], a: str, b: str) -> Section | None:
    """Whole sets always; a pack's single tasks only where the two runs scored differently."""
    shown = [d for d in diffs if "/" not in d.name or (d.baseline.k, d.baseline.n) != (d.other.k, d.other.n)]
    if not shown:
        return None
    hidden = len(diffs) - len(shown)
    rows: list[list[str | Cell]] = [[d.name, str(d.test.n), f"{d.baseline.k}/{d.baseline.n}",
                                     f"{d.other.k}/{d.other.n}", *_test_cells(d.test, d.test.diff)] for d in shown]
    more = f"; {hidden} task(s) scored the same in both, not listed" if hidden else ""
    notes = [n for n in (_undecided(d.name, d.test) for d in shown) if n is not None]
    return Section(f"{title}: B = {b} vs A = {a} (correct / asked; {_TESTS}{more})", _head("set"), rows, notes,
                   left_cols=1)


def _probes(c: SuiteComparison, a: str, b: str) -> Section | None:
    if not c.probes:
        return None
    changed = [p for p in c.probes if p.changed]
    rows: list[list[str | Cell]] = [[p.probe, p.baseline or "–", p.other or "–", Cell("CHANGED", "notable")]
                                    for p in changed]
    same = "" if len(changed) == len(c.probes) else f"; the other {len(c.probes) - len(changed)} agree"
    return Section(f"Agent probes: {len(changed)} of {len(c.probes)} verdicts differ between A = {a} and "
                   f"B = {b}{same}", ["probe", "A", "B", ""], rows, left_cols=4)


def _tasks(c: SuiteComparison, a: str, b: str) -> Section | None:
    if not c.tasks:
        return None
    return Section(f"Multi-turn tasks: passed / trials, pass^k (A = {a}, B = {b}; too few trials for a test)",
                   ["task", "A", "B"],
                   [[t.task, t.baseline, t.other] for t in c.tasks], left_cols=3)


def _sections(c: SuiteComparison, a: str, b: str) -> list[Section]:
    found = [_mmlu(c, a, b), _graded("Task packs", c.packs, a, b), _graded("Agent accuracy", c.agent, a, b),
             _probes(c, a, b), _tasks(c, a, b)]
    return [s for s in found if s is not None]


def suite_comparison_sections(c: SuiteComparison, *, baseline: str, other: str) -> list[Section]:
    """One section per table (a section with no rows says only its title), for every renderer."""
    return _sections(c, baseline, other)


NOT_SIGNIFICANT_NOTE = _NS


def suite_comparison_terminal(c: SuiteComparison, console: Console, *, baseline: str, other: str) -> None:
    """Nothing when the runs share no quality or agent results."""
    for sec in _sections(c, baseline, other):
        # the title on a line of its own, full width: as a table title it would wrap to the table's width
        console.print(sec.title, style="bold", highlight=False, markup=False)
        if sec.rows:
            section_terminal(console, sec, layout="simple", title=False)
    if not c.empty:
        console.print(f"[dim]{_NS}[/]")


def suite_comparison_markdown(c: SuiteComparison, *, baseline: str, other: str, heading: str | None = None) -> str:
    parts = [section_markdown(sec, heading=heading) for sec in _sections(c, baseline, other)]
    if parts:
        parts.append(_NS)
    return "\n\n".join(parts)
