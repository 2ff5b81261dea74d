"""A report section is built once as cells and drawn to the terminal, Markdown and HTML: the three
show the same rows, and each marks the verdicts a reader must not miss."""

from __future__ import annotations

import html
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
    # as a Markdown reader sees a cell: backslash escapes and entities resolved (rigbench.outside)
    md_rows = [[html.unescape(re.sub(r"\\(.)", r"\1", c.strip().strip("*"))) for c in line.strip("|").split(" | ")]
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


# -- the honesty sections: speculation, speed comparison, sanity gate, preflight ------------------

H200 = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200"
NODRAFT, DEPTH4 = H200 / "20261129-191407-h200-nodraft-5101", H200 / "20261129-191906-h200-depth4-1c8a"


def _speculation() -> Section:
    from rigbench.analysis import fit_speculation
    from rigbench.report._hardware import speculation_section

    fit = fit_speculation(RunReader(NODRAFT), RunReader(DEPTH4))
    assert fit is not None
    return speculation_section("h200-depth4 [synthetic L=3.4]", fit)


def _comparison() -> Section:
    from rigbench.analysis import compare_runs
    from rigbench.report import synth_note
    from rigbench.report._comparison import comparison_section

    [c] = compare_runs(RunReader(NODRAFT), [RunReader(DEPTH4)])
    return comparison_section(c, {NODRAFT.name: "nodraft", DEPTH4.name: "depth4"},
                              {DEPTH4.name: synth_note(RunReader(DEPTH4).header)})


def _sanity() -> Section:
    from rigbench.report._checks import sanity_section

    return sanity_section(*analyze_run(RunReader(NODRAFT)).sections["sanity"])


def _preflight() -> Section:
    from rigbench.records import PreflightFinding, PreflightReport, ServingCommand
    from rigbench.report._checks import preflight_section

    return preflight_section(PreflightReport(
        command=ServingCommand(engine="vllm", argv=["vllm", "serve", "m"], model="m"),
        findings=[PreflightFinding(id="max_model_len", severity="error", problem="context too short",
                                   evidence="--max-model-len 2048", fix="raise it to 8192"),
                  PreflightFinding(id="prefix_caching", severity="info", problem="prefix caching on",
                                   evidence="default", fix="rigbench sends a nonce")]))


def _md_read(md: str) -> str:
    """Markdown as its reader sees it: bold markers dropped, backslash escapes and entities resolved
    (rigbench.outside)."""
    md = re.sub(r"(?<!\\)\*\*", "", md)  # bold markers (a literal * is escaped: \*)
    return html.unescape(re.sub(r"\\(.)", r"\1", md))


def _terminal_rows(sec: Section) -> list[list[str]]:
    console = Console(width=400, record=True, color_system=None)
    section_terminal(console, sec)
    lines = [re.split(r"\s{2,}", line.strip()) for line in console.export_text().splitlines()]
    return [line for line in lines if line[0] in {r[0] for r in sec.texts}]


@pytest.mark.parametrize("build", [_speculation, _comparison, _sanity, _preflight])
def test_each_honesty_section_shows_the_same_rows_and_notes_in_every_output(build) -> None:  # type: ignore[no-untyped-def]
    sec = build()
    want = sec.texts
    assert want
    md = section_markdown(sec, heading=None)
    # as a Markdown reader sees a cell: backslash escapes and entities resolved (rigbench.outside)
    md_rows = [[html.unescape(re.sub(r"\\(.)", r"\1", c.strip().strip("*"))) for c in line.strip("|").split(" | ")]
               for line in md.splitlines() if line.startswith("| ") and not line.startswith(f"| {sec.head[0]} |")]
    assert md_rows == want
    parser = _Cells()
    parser.feed(section_html(sec))
    assert [r for r in parser.rows if r] == want
    assert _terminal_rows(sec) == want
    page = section_html(sec)
    console = Console(width=400, record=True, color_system=None)
    section_terminal(console, sec)
    terminal = console.export_text()
    for n in sec.notes:  # every note in every output
        assert n.text in _md_read(md) and html.escape(n.text, quote=False) in page.replace("&#x27;", "'")
        assert n.text in terminal


def test_a_speed_comparison_marks_the_same_cells_everywhere() -> None:
    sec = _comparison()
    # every row at concurrency 1: no c column in any output, the title says so
    assert "c" not in sec.head and sec.title.endswith("concurrency 1)")
    assert sec.head[4] == "SYNTHETIC ratio B/A" and sec.head[5] == "Welch p"
    md = section_markdown(sec, heading=None)
    assert "| **1.96×±0.05** | <0.001 | differs |" in md  # the synthetic ratio stands out, p as on the terminal
    assert "- fingerprint differences:" in md and "\n  - argv: " in md  # the differences nest under it
    assert "52739" not in md and "endpoint" not in md  # the servers' ports are no difference between the rigs
    parser = _Cells()
    parser.feed(section_html(sec))
    assert {"1.96×±0.05", "differs"} <= parser.bold
    console = Console(width=120, record=True, force_terminal=True, color_system="standard")
    section_terminal(console, sec, layout="simple", notes_indent="")
    out = console.export_text(styles=True)
    assert "\x1b[31m1.96×±0.05" in out and "\x1b[1mdiffers" in out


def test_a_failed_gate_gives_its_reasons_in_markdown_and_its_answers_on_the_terminal() -> None:
    sec = _sanity()
    assert sec.title.startswith("Sanity gate: FAILED, 0/10")
    md = section_markdown(sec, heading=None)
    assert "- **✗ en_capital_france**: wrong answer" in md  # the terminal's reasons, now in Markdown too
    assert len(_terminal_rows(sec)) == 10  # Markdown's per-question table, now on the terminal too


def test_preflight_names_the_command_and_marks_errors_in_every_output() -> None:
    sec = _preflight()
    assert sec.title == "Preflight of a vllm command line (model m)"
    md = section_markdown(sec, heading=None)
    assert md.startswith("**Preflight of a vllm command line (model m)**")
    assert "| max_model_len | **error** |" in md and "| prefix_caching | info |" in md


def test_a_clean_preflight_is_a_title_and_a_note() -> None:
    from rigbench.records import PreflightReport
    from rigbench.report._checks import preflight_section

    sec = preflight_section(PreflightReport(command=None))
    assert section_markdown(sec, heading=None) == "**Preflight**\n\n- no configuration traps found"
    console = Console(width=80, record=True, color_system=None)
    section_terminal(console, sec, notes_indent="")
    assert console.export_text().splitlines() == ["Preflight", "no configuration traps found"]


def test_the_html_report_shows_each_runs_gate_as_the_terminal_does() -> None:
    from rigbench.report import render_html

    page = render_html(["nodraft"], [analyze_run(RunReader(NODRAFT))])
    details = page[page.index("<h2>nodraft: details</h2>"):page.index("<h2>Warnings</h2>")]
    assert "<h3>Sanity gate: FAILED, 0/10 known-answer questions (greedy, seed 0)</h3>" in details
    assert details.count("Sanity gate: FAILED") == 1  # as a table, not again in the terminal block
