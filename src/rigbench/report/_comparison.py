"""Two runs compared scenario by scenario (ratio, Welch test, equivalence verdict), drawn. Terminal (rich) and
Markdown; nothing is computed here."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from rigbench.analysis import Comparison, session_neutral
from rigbench.report._cells import Cell, Note, Section, Severity, section_markdown, section_terminal
from rigbench.report._fmt import fmt_margin, verdict_cell, verdict_sentence

__all__ = ["argv_diff", "comparison_markdown", "comparison_section", "comparison_terminal"]


# -- comparisons ---------------------------------------------------------------------------------


_VERDICT: dict[str, Severity] = {"differs": "notable", "same": "ok", "inconclusive": "warn"}


def _cmp_row(r: Any, *, one_c: bool, synthetic: bool) -> list[str | Cell]:
    res = r.result
    ratio = "–" if res.ratio is None else (f"{res.ratio:.2f}×±{res.ratio_err:.2f}" if res.ratio_err is not None
                                           else f"{res.ratio:.2f}×")
    p = "–" if res.p is None else "<0.001" if res.p < 0.001 else f"{res.p:.3f}"
    return [r.scenario, *([] if one_c else [str(r.concurrency)]), f"{r.baseline.n}/{r.other.n}",
            _ms(r.baseline.mean, r.baseline.std), _ms(r.other.mean, r.other.std),
            Cell(ratio, "error") if synthetic else ratio, p,
            Cell(verdict_cell(res.verdict, res.margin, None), _VERDICT[res.verdict])]


def _ms(mean: float, sd: float) -> str:
    """Mean ± sd to about three significant digits: 129±7, 65.4±0.4, 0.074±0.002."""
    d = 0 if abs(mean) >= 100 else 1 if abs(mean) >= 10 else 2 if abs(mean) >= 1 else 3
    return f"{mean:.{d}f}±{sd:.{d}f}"


_CMP_HEAD = ["scenario", "c", "n A/B", "A mean±sd", "B mean±sd", "ratio B/A", "Welch p", "verdict"]
_CMP_SHORT = ["scenario", "c", "n\nA/B", "A\nmean±sd", "B\nmean±sd", "ratio\nB/A", "Welch\np", "verdict"]
_RATIO = 5  # the ratio column of _CMP_HEAD


def _names(c: Comparison, labels: Mapping[str, str] | None) -> tuple[str, str]:
    labels = labels or {}
    return labels.get(c.baseline_run, c.baseline_run), labels.get(c.other_run, c.other_run)


def argv_diff(a: list[str], b: list[str]) -> str:
    """What the other command line adds (+) and drops (−), not both lines in full."""
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            out.append("− " + " ".join(a[i1:i2]))
        if op in ("insert", "replace"):
            out.append("+ " + " ".join(b[j1:j2]))
    return "; ".join(out)


def _difference(d: Any) -> str:
    if d.field == "argv" and isinstance(d.baseline, list) and isinstance(d.other, list):
        # the ports the servers happened to get are no difference between the rigs
        return f"argv: {argv_diff(session_neutral(d.baseline), session_neutral(d.other))}"
    return f"{d.field}: {d.baseline!r} → {d.other!r}"


def comparison_section(c: Comparison, labels: Mapping[str, str] | None = None,
                       synthetic: Mapping[str, str] | None = None) -> Section:
    """One metric of B against A, scenario by scenario: means ± sd, the ratio with its error, Welch's p
    and the verdict; under it what each run is, what differs in their fingerprints, and what only
    one run has. `labels`: run directory name -> short rig label. `synthetic`: run directory name ->
    the synthetic-acceptance note, shown in red with every ratio of that run. The concurrency column
    is left out when every row is at concurrency 1 (the title says so)."""
    a, b = _names(c, labels)
    note = (synthetic or {}).get(c.other_run)
    one_c = all(r.concurrency == 1 for r in c.rows)
    keep = [i for i in range(len(_CMP_HEAD)) if not (one_c and i == 1)]
    head = [_CMP_HEAD[i].replace("ratio", "SYNTHETIC ratio") if note and i == _RATIO else _CMP_HEAD[i] for i in keep]
    short = [_CMP_SHORT[i].replace("ratio", "SYNTH.") if note and i == _RATIO else _CMP_SHORT[i] for i in keep]
    notes = [Note(f"{b}: {note}", "error")] if note else []
    notes.append(Note(f"A = {c.baseline_run} (data {c.baseline_source_data_id}), "
                      f"B = {c.other_run} (data {c.other_source_data_id})", "muted"))
    if c.differences:
        notes.append(Note("fingerprint differences" + (" (compared anyway: --allow-mismatch)" if c.mismatch_allowed
                                                       else "") + ":", "error" if c.mismatch_allowed else None))
        notes += [Note(_difference(d) + ("" if d.matters else " (expected)"), level=1) for d in c.differences]
    if c.missing:
        notes.append(Note(f"in one run only: {', '.join(c.missing)}"))
    if c.other_shape:
        notes.append(Note(f"not compared, another workload in each run: {', '.join(c.other_shape)}", "warn"))
    notes += _verdict_key(c, one_c=one_c)
    return Section(f"{c.metric}: B = {b} vs A = {a} (Welch + TOST {fmt_margin(c.margin)}, α = {c.alpha}"
                   + (", concurrency 1)" if one_c else ")"), head,
                   [_cmp_row(r, one_c=one_c, synthetic=note is not None) for r in c.rows], notes, short_head=short)


def _verdict_key(c: Comparison, *, one_c: bool) -> list[Note]:
    """What the verdicts mean, then each inconclusive row spelled out: the repetitions that would decide."""
    m = fmt_margin(c.margin)
    out = [Note(f"same {m}: two one-sided tests put B/A within {1 - c.margin:g}–{1 + c.margin:g}; differs: "
                f"Welch p < {c.alpha:g}; inconclusive: neither decides (repetitions that would: 80% power at the "
                f"observed spread).", "muted")]
    for r in c.rows:
        if r.result.verdict == "inconclusive":
            where = r.scenario + ("" if one_c else f" c={r.concurrency}")
            out.append(Note(f"{where}: " + verdict_sentence("inconclusive", c.margin, r.result.needed_n,
                                                           reason=r.result.reason), level=1))
    return out


def comparison_terminal(cs: Sequence[Comparison], console: Console, labels: Mapping[str, str] | None = None,
                        synthetic: Mapping[str, str] | None = None) -> None:
    """`comparison_section` per comparison (its arguments)."""
    for c in cs:
        section_terminal(console, comparison_section(c, labels, synthetic), layout="simple", notes_indent="")


def comparison_markdown(cs: Sequence[Comparison], labels: Mapping[str, str] | None = None,
                        synthetic: Mapping[str, str] | None = None) -> str:
    return "\n\n".join(section_markdown(comparison_section(c, labels, synthetic), heading=None) for c in cs)
