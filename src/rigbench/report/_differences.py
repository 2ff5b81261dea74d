"""What differs between the rigs of a report of several runs, from their fingerprints, as one
section that the terminal, the Markdown and the HTML report all draw (report/_cells.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console

from rigbench.analysis import fingerprint_differences, session_neutral
from rigbench.report._cells import Cell, Note, Section, section_terminal
from rigbench.report._comparison import argv_diff
from rigbench.store import RunHeader

__all__ = ["differences_section", "differences_terminal"]


def _value(v: Any) -> str:
    return ", ".join(str(x) for x in v) if isinstance(v, list) else str(v)


def differences_section(names: Sequence[str], headers: Sequence[RunHeader]) -> Section:
    """Each run against the first, field by field, values as `session_neutral` shows them (ports and
    temporary paths aside, as the comparison ignores them); a field that changes what is measured
    (model, engine, machine) is marked. A run with no fingerprint says so."""
    base, first = headers[0].fingerprint, names[0]
    rows: list[list[str | Cell]] = []
    if base is None:
        rows.append([first, "fingerprint", Cell("not recorded", "warn"), "", ""])
    for name, h in zip(names[1:], headers[1:], strict=True):
        if h.fingerprint is None:
            rows.append([name, "fingerprint", "", Cell("not recorded", "warn"), ""])
            continue
        for d in fingerprint_differences(base, h.fingerprint):
            if d.field == "argv" and isinstance(d.baseline, list) and isinstance(d.other, list):
                was, now = "", argv_diff(session_neutral(d.baseline), session_neutral(d.other))
            else:
                was, now = _value(session_neutral(d.baseline)), _value(session_neutral(d.other))
            rows.append([name, d.field, was, now, Cell("what is measured", "error") if d.matters else "flags"])
    notes = [] if rows else [Note("The rigs' fingerprints do not differ (ports and temporary paths aside).", "ok")]
    if any(isinstance(r[4], Cell) for r in rows):
        notes.append(Note("A difference in what is measured (model, engine, its version, machine) means a ratio "
                          "between these runs mixes that change with any flag change.", "warn"))
    return Section(f"What differs between the rigs (against {first}, from their fingerprints)",
                   ["run", "field", first, "this run", "changes"], rows, notes, left_cols=5)


def differences_terminal(console: Console, names: Sequence[str], headers: Sequence[RunHeader]) -> None:
    section_terminal(console, differences_section(names, headers))
