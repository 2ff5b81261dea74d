"""Whole-run reports: terminal (rich), Markdown, JSON. They format; they never compute."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from rigbench.analysis import RunAnalysis
from rigbench.outside import for_console, for_json, for_markdown, visible
from rigbench.report._answer import answer_sections
from rigbench.report._cells import Cell, section_markdown, section_terminal, text
from rigbench.report._publish import hide_session_details, report_title
from rigbench.report._run_sections import findings_section, run_parts

__all__ = ["render_json", "render_markdown", "render_terminal", "shift_headings"]

# UNTRUSTED reasons listed in the terminal's header panel before the rest are counted (a failed gate
# gives one per question: ten red lines would push every table off the screen).
_PANEL_REASONS = 3
# Other findings on the first screen, under the answer; beyond them a count, and all of them at the end.
_FIRST_SCREEN_WARNINGS = 4

_PANEL_STYLE: dict[str | None, str] = {"ok": "green", "critical": "bold red", "error": "red", "warn": "yellow"}


def _findings_panel(a: RunAnalysis, console: Console) -> None:
    """The run in a header panel: what was measured (model, engine, machine), the verdict with its
    UNTRUSTED reasons (beyond three, a count and where to read them all), and the run's identity."""
    sec = findings_section(a)
    verdict = next(v for k, v in sec.rows if text(k) == "verdict")
    style = _PANEL_STYLE.get(verdict.severity if isinstance(verdict, Cell) else None, "")
    parts: list[Any] = [
        Text(visible(report_title([a.header])), style="bold"),
        Text.assemble("verdict ", (text(verdict), style), "  status ", (a.status, "bold"), "  run ",
                      (visible(a.header.run_id), "cyan")),
        Text(f"started {visible(a.header.created_at[:16].replace('T', ' '))}  source data {a.source_data_id}  "
             f"rigbench {visible(a.header.rigbench_version)}", style="dim")]
    reasons = [n for n in sec.notes if n.severity == "error"]
    shown = reasons if len(reasons) <= _PANEL_REASONS + 1 else reasons[:_PANEL_REASONS]
    for n in [n for n in sec.notes if n.severity == "critical"] + shown:
        parts.append(Text("! " + visible(n.text, multiline=True), style=_PANEL_STYLE[n.severity]))
    if len(shown) < len(reasons):
        rest = [n.text for n in reasons[len(shown):]]
        parts.append(Text(f"! and {len(rest)} more UNTRUSTED reasons ({_where_rest(a, rest)})", style="red"))
    console.print(Panel(Group(*parts), title="rigbench", title_align="left"))


def _other_findings(a: RunAnalysis) -> list[str]:
    """The findings that are neither UNTRUSTED reasons nor a synthetic-acceptance run's mark."""
    return [n.text for n in findings_section(a).notes if n.severity not in ("critical", "error")]


def _warnings_terminal(console: Console, warnings: list[str], *, first_screen: bool) -> None:
    """`first_screen`: a title, then at most _FIRST_SCREEN_WARNINGS + 1 of them, else the first ones and a count
    (all of them are listed again at the end of the report)."""
    shown = warnings if not first_screen or len(warnings) <= _FIRST_SCREEN_WARNINGS + 1 \
        else warnings[:_FIRST_SCREEN_WARNINGS]
    if first_screen:
        console.print(Text(f"Warnings ({len(warnings)})", style="yellow"), highlight=False)
    for w in shown:
        console.print(Text("! " + visible(w, multiline=True), style="yellow"), highlight=False)
    if len(shown) < len(warnings):
        console.print(Text(f"! and {len(warnings) - len(shown)} more, listed under \"All warnings\" at the end",
                           style="yellow"), highlight=False)


def _where_rest(a: RunAnalysis, rest: list[str]) -> str:
    """Where the reasons the panel leaves out are printed: the sanity gate's are listed with it below;
    any other only in the Markdown report."""
    gate = a.sections.get("sanity")
    gate_reasons = {f"UNTRUSTED: {r}" for r in gate[0].reasons} if gate is not None else set()
    if all(w in gate_reasons for w in rest):
        return "the sanity gate's, listed with it below"
    return f"every one: rigbench report {visible(a.run_dir)} --markdown FILE"


def render_terminal(a: RunAnalysis, console: Console) -> None:
    """The answer first: the header panel (what was measured, the verdict), the run's answer
    (report/_answer.py) and its warnings; then every section of `run_parts`, a blank line between them;
    the warnings the first screen left out at the end."""
    _findings_panel(a, console)
    for sec in answer_sections(a):
        console.print()
        section_terminal(console, sec, layout="simple", notes_indent="")
    warnings = _other_findings(a)
    if warnings:
        console.print()
        _warnings_terminal(console, warnings, first_screen=True)
    for part in run_parts(a):
        console.print()
        if part.terminal is not None:
            part.terminal(console, part.section)
        else:
            section_terminal(console, part.section, layout=part.layout, notes_indent=part.notes_indent)
    if len(warnings) > _FIRST_SCREEN_WARNINGS + 1:
        console.print()
        console.rule(f"All warnings ({len(warnings)})", align="left")
        _warnings_terminal(console, warnings, first_screen=False)
    console.print(f"[dim]run directory: {for_console(a.run_dir)}[/]")


def _findings_markdown(a: RunAnalysis) -> list[str]:
    """The findings section as a post's opening: its rows on one line, then the reasons quoted."""
    sec = findings_section(a)
    pairs = {text(k): for_markdown(text(v)) for k, v in sec.rows}
    out = [f"**Verdict: {pairs['verdict']}** · run `{a.header.run_id}` · status {pairs['status']} · source data "
           f"`{a.source_data_id}` · rigbench {pairs['rigbench']} · started {pairs['started']}", ""]
    lead = [n for n in sec.notes if n.severity in ("critical", "error")]
    if lead:
        out += [f"> {for_markdown(n.text)}" for n in lead] + [""]
    return out


def render_markdown(a: RunAnalysis, *, paths: bool = False, title: str | None = None) -> str:
    """One run as a post: an H1 naming model, engine and machine, the verdict and its reasons, the run's
    answer (report/_answer.py) and its warnings, then every section of `run_parts` (`##`, `###` below them).
    `paths`: keep home-directory and temporary paths and local ports (hidden by default). `title`: the H1 (a
    report of several runs gives each run its label and shifts it a level down)."""
    out = [f"# {for_markdown(title or report_title([a.header]))}", "", *_findings_markdown(a)]
    for sec in answer_sections(a):
        out += [section_markdown(sec, heading="##"), ""]
    warnings = _other_findings(a)
    if warnings:
        out += [f"> {for_markdown(w)}" for w in warnings] + [""]
    for part in run_parts(a):
        out += [section_markdown(part.section, heading="#" * (part.level + 1),
                                 align=part.layout != "pairs"), ""]
    out += [f"Source data: `{a.source_data_id}`", ""]
    text_ = "\n".join(out)
    return text_ if paths else hide_session_details(text_)


def shift_headings(markdown: str, by: int) -> str:
    """Every ATX heading `by` levels deeper (outside code blocks), to nest a document in another."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        out.append("#" * by + line if not fenced and line.startswith("#") and line.lstrip("#").startswith(" ")
                   else line)
    return "\n".join(out)


def render_json(a: RunAnalysis) -> str:
    """The analysed run as JSON; server text in it (replies, names) has its bidi overrides and C1 controls
    escaped, as JSON lines' encoder does (rigbench.outside)."""
    return for_json(a.model_dump_json(indent=2))
