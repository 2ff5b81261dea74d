"""The agent-readiness summary: its tables built once as cells, drawn for the terminal and Markdown."""

from __future__ import annotations

import math

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rigbench.analysis import AgentSummary, ProbeRow, Proportion, Stat, TaskScore
from rigbench.outside import visible
from rigbench.report._cells import (
    Cell,
    Note,
    Section,
    Severity,
    rich_cell,
    section_markdown,
    section_terminal,
    text,
)

__all__ = ["agent_head", "agent_sections", "probe_terminal", "render_agent_markdown", "render_agent_terminal"]

_MARK = {"pass": "pass", "fail": "FAIL", "silently_ignored": "SILENTLY IGNORED", "not_applicable": "n/a"}
# silently ignored outranks a failure: HTTP 200 and no error, so agent code breaks without an exception
_SEVERITY: dict[str, Severity] = {"pass": "ok", "fail": "error", "silently_ignored": "critical",
                                  "not_applicable": "muted"}
_TASK_NOTE = ("Turns, tool calls, tokens and wall time are median ± standard deviation over trials. "
              "A task passes only when rigbench's own pytest run (or answer check) says so.")


def _pct(p: Proportion | None) -> str:
    if p is None or p.n == 0 or math.isnan(p.p):
        return "–"
    return f"{100 * p.p:.0f}% ± {100 * p.se:.0f}% ({p.k}/{p.n})"


def _dist(d: dict[int, int]) -> str:
    return ", ".join(f"{k}:{v}" for k, v in sorted(d.items())) or "–"


def _stat(s: Stat | None, digits: int = 1) -> str:
    return "–" if s is None else f"{s.median:.{digits}f} ± {s.std:.{digits}f}"


def _dist_str(d: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in d.items()) or "–"


def _headline(s: AgentSummary) -> list[str]:
    c = s.verdict_counts
    lines = [
        f"Probes: {c.get('pass', 0)} pass, {c.get('fail', 0)} fail, {c.get('silently_ignored', 0)} silently "
        f"ignored, {c.get('not_applicable', 0)} not applicable."
    ]
    if s.silently_ignored:
        lines.append(
            "Silently ignored (HTTP 200, no error, instruction had no effect; agent code breaks without "
            f"an exception): {', '.join(s.silently_ignored)}."
        )
    if s.tool_accuracy is not None:
        lines.append(f"Tool-call cases: {_pct(s.tool_accuracy)} of trials correct (± is the standard error).")
    if s.bfcl_accuracy is not None:
        lines.append(f"BFCL ({s.bfcl_version}): {_pct(s.bfcl_accuracy)} valid.")
    for t in s.tasks:
        why = "; ".join(f"{r} in {n}" for r, n in t.not_passed_why.items())
        lines.append(
            f"Task {t.task}: pass^{t.k} = {t.pass_hat_k:.2f} ({t.passed}/{t.trials} trials passed), "
            f"turns {_stat(t.turns)}, wall {_stat(t.wall_s)} s."
            + (f" Not passed: {why} (trials)." if why else "")
        )
    return lines


def _probes(probes: list[ProbeRow]) -> Section:
    rows: list[list[str | Cell]] = [[p.probe, Cell(_MARK[p.verdict], _SEVERITY[p.verdict]), p.detail] for p in probes]
    return Section("Conformance probes", ["probe", "verdict", "evidence"], rows, left_cols=3)


def _task_cells(r: TaskScore) -> list[str]:
    return [r.task, f"{r.pass_hat_k:.2f} (k={r.k})", f"{r.passed}/{r.trials}", _stat(r.turns), _stat(r.tool_calls),
            _dist(r.calls_per_turn), _stat(r.completion_tokens, 0), _stat(r.wall_s), _dist_str(r.stop_reasons)]


def agent_sections(s: AgentSummary) -> list[Section]:
    """The probe, tool-call, BFCL and multi-turn tables that the run has, in that order."""
    out = []
    if s.probes:
        out.append(_probes(s.probes))
    if s.tool_cases:
        rows = [[c.case, _pct(c.accuracy), _dist(c.calls_per_message), _dist(c.messages_per_trial),
                 ("; ".join(f"{r} (x{n})" for r, n in c.failure_reasons.items()) or "–")[:160]]
                for c in s.tool_cases]
        out.append(Section("Tool-call cases", ["case", "correct (± SE)", "calls per message (calls:messages)",
                                               "messages per trial", "failures"], rows, left_cols=5,
                           short_head=["case", "correct", "calls per message (calls:messages)", "messages per trial",
                                       "failures"]))
    if s.bfcl:
        out.append(Section(f"BFCL {s.bfcl_version}", ["category", "valid (± SE)", "error types"],
                           [[b.category, _pct(b.accuracy), _dist_str(b.error_types)] for b in s.bfcl], left_cols=3,
                           short_head=["category", "valid", "error types"]))
    if s.tasks:
        head = ["task", "pass^k", "passed", "turns", "tool calls", "calls per turn", "completion tokens", "wall s",
                "stopped by"]
        out.append(Section("Multi-turn tasks", head, [_task_cells(r) for r in s.tasks], left_cols=9,
                           short_head=[h.replace("tokens", "tok") for h in head]))
    return out


def _networks(s: AgentSummary) -> list[str]:
    return sorted({r.network for r in s.tasks if r.network})


def agent_head(s: AgentSummary) -> Section:
    """The agent suite's headline (probe counts, what was silently ignored, accuracies, pass^k per
    task) as the notes of a section of its own, above its tables."""
    if s.empty:
        return Section("Agent readiness", [], [], [Note("No agent records in this run.", "muted")])
    notes = [Note(line, "warn" if line.startswith("Silently ignored") else None) for line in _headline(s)]
    notes += [Note(f"Sandbox network: {n}.") for n in _networks(s)]
    if s.tasks:
        notes.append(Note(_TASK_NOTE, "muted"))
    return Section("Agent readiness", [], [], notes)


def probe_terminal(console: Console, sec: Section) -> None:
    """The probe table on the terminal: wide, probe | verdict | evidence; narrow, the verdict under the
    probe's name, so the evidence gets most of the width (two or three lines, not five)."""
    console.print(_probe_table(sec, console.width))


def render_agent_terminal(console: Console, summary: AgentSummary) -> None:
    section_terminal(console, agent_head(summary), notes_indent="")
    for sec in agent_sections(summary):
        if sec.title == "Conformance probes":
            probe_terminal(console, sec)
        else:
            section_terminal(console, sec)


def _probe_table(sec: Section, width: int) -> Table:
    """Wide: probe | verdict | evidence. Narrow: the verdict under the probe's name."""
    t = Table(title=Text(visible(sec.title)), title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
              collapse_padding=True, pad_edge=False)
    narrow = width < 120
    t.add_column("probe / verdict" if narrow else "probe", no_wrap=True)
    if not narrow:
        t.add_column("verdict", no_wrap=True)
    t.add_column("evidence", overflow="fold")
    for probe, verdict, detail in sec.rows:
        if narrow:
            t.add_row(Text.assemble(visible(text(probe)), "\n  ", rich_cell(verdict)), rich_cell(detail))
        else:
            t.add_row(rich_cell(probe), rich_cell(verdict), rich_cell(detail))
    return t


def render_agent_markdown(summary: AgentSummary) -> str:
    out = [section_markdown(agent_head(summary), heading="##")]
    out += [section_markdown(sec) for sec in agent_sections(summary)]
    return "\n\n".join(out).rstrip() + "\n"
