"""A report section is built once as cells and drawn to the terminal, Markdown and HTML: the three
show the same rows, and each marks the verdicts a reader must not miss."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.console import Console

from rigbench.analysis import analyze_run
from rigbench.report._agent import agent_sections
from rigbench.report._cells import Cell, Note, Section, section_html, section_markdown, section_terminal
from rigbench.store import RunReader

GOLDEN_B = Path(__file__).resolve().parents[1] / "golden" / "emulator_b"


def _probes() -> Section:
    sections = agent_sections(analyze_run(RunReader(GOLDEN_B)).sections["agent"])
    return next(s for s in sections if s.title == "Conformance probes")


class _Cells(HTMLParser):
    """The text of every <td>, row by row, and which of them are bold."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.bold: set[str] = set()
        self._in_td = self._in_b = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        self._in_td |= tag == "td"
        self._in_b |= tag == "b"
        if tag == "td":
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_td &= tag != "td"
        self._in_b &= tag != "b"

    def handle_data(self, data: str) -> None:
        if self._in_td:
            self.rows[-1][-1] += data
            if self._in_b:
                self.bold.add(data)


def test_one_stored_section_shows_the_same_rows_in_terminal_markdown_and_html() -> None:
    sec = _probes()
    want = sec.texts
    assert len(want) == 15 and want[0][:2] == ["tool_choice_none", "SILENTLY IGNORED"]

    md = section_markdown(sec)
    md_rows = [[c.strip().strip("*").replace("\\|", "|") for c in line.strip("|").split(" | ")]
               for line in md.splitlines() if line.startswith("| ") and not line.startswith("| probe |")]
    assert md_rows == want

    parser = _Cells()
    parser.feed(section_html(sec))
    assert [r for r in parser.rows if r] == want

    console = Console(width=400, record=True, color_system=None)
    section_terminal(console, sec)
    lines = [re.split(r"\s{2,}", line.strip()) for line in console.export_text().splitlines()]
    assert [line for line in lines if line[0] in {r[0] for r in want}] == want

    # what the reader must not miss is marked in every output that can mark it
    dangerous = {r[1] for r in want if r[1] in ("SILENTLY IGNORED", "FAIL")}
    assert dangerous == {"SILENTLY IGNORED", "FAIL"}
    for verdict in dangerous:
        assert f"| **{verdict}** |" in md
    assert parser.bold == dangerous
    assert "| pass |" in md and "**pass**" not in md


def test_verdicts_are_coloured_by_severity_in_the_terminal() -> None:
    console = Console(width=400, record=True, force_terminal=True, color_system="truecolor")
    section_terminal(console, _probes())
    out = console.export_text(styles=True)
    # bold magenta (1;35) for silently ignored, red (31) for fail, green (32) for pass
    assert "\x1b[1;35mSILENTLY IGNORED" in out and "\x1b[31mFAIL" in out and "\x1b[32mpass" in out


def test_notes_follow_the_table_and_warnings_stand_out() -> None:
    sec = Section("t", ["a", "b"], [["x", "1"]], notes=[Note("how to read"), Note("Warning: few samples", "warn")])
    assert section_markdown(sec, heading=None).splitlines() == [
        "**t**", "", "| a | b |", "|---|---:|", "| x | 1 |", "", "- how to read", "- Warning: few samples"]
    assert '<p class="note">Warning: few samples</p>' in section_html(sec)
    console = Console(width=80, record=True, force_terminal=True, color_system="standard")
    section_terminal(console, sec)
    assert "\x1b[33m  Warning: few samples" in console.export_text(styles=True)


def test_markdown_cells_cannot_break_the_table() -> None:
    sec = Section("t", ["a", "b"], [["x | y", Cell("two\nlines", "error")]], left_cols=2)
    assert "| x \\| y | **two lines** |" in section_markdown(sec)


def test_a_row_that_does_not_fit_the_header_is_refused() -> None:
    with pytest.raises(ValueError, match=r"report section 'probes': a row has 2 cells for 3 columns"):
        Section("probes", ["probe", "verdict", "evidence"], [["seed", "pass"]])
