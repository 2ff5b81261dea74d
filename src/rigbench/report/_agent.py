"""The agent-readiness summary, as rich tables for the terminal and as Markdown."""

from __future__ import annotations

import math

from rich import box
from rich.console import Console
from rich.table import Table

from rigbench.analysis._agent import AgentSummary, TaskScore
from rigbench.analysis._quality import Proportion
from rigbench.analysis._stats import Stat
from rigbench.report._layout import fitted_table

__all__ = ["render_agent_markdown", "render_agent_terminal"]

_MARK = {"pass": "pass", "fail": "FAIL", "silently_ignored": "SILENTLY IGNORED", "not_applicable": "n/a"}
_STYLE = {"pass": "green", "fail": "red", "silently_ignored": "bold magenta", "not_applicable": "dim"}


def _pct(p: Proportion | None) -> str:
    if p is None or p.n == 0 or math.isnan(p.p):
        return "–"
    return f"{100 * p.p:.0f}% ± {100 * p.se:.0f}% ({p.k}/{p.n})"


def _dist(d: dict[int, int]) -> str:
    return ", ".join(f"{k}:{v}" for k, v in sorted(d.items())) or "–"


def _stat(s: Stat | None, digits: int = 1) -> str:
    return "–" if s is None else f"{s.median:.{digits}f} ± {s.std:.{digits}f}"


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
        lines.append(
            f"Task {t.task}: pass^{t.k} = {t.pass_hat_k:.2f} ({t.passed}/{t.trials} trials passed), "
            f"turns {_stat(t.turns)}, wall {_stat(t.wall_s)} s."
        )
    return lines


def render_agent_terminal(console: Console, summary: AgentSummary) -> None:
    if summary.empty:
        console.print("[dim]No agent records in this run.[/dim]")
        return
    console.print("[bold]Agent readiness[/bold]")
    for line in _headline(summary):
        console.print(line, highlight=False)
    if summary.probes:
        console.print(_probe_table(summary, console.width))
    if summary.tool_cases:
        rows = [[c.case, _pct(c.accuracy), _dist(c.calls_per_message), _dist(c.messages_per_trial),
                 ("; ".join(f"{r} (x{n})" for r, n in c.failure_reasons.items()) or "–")[:120]]
                for c in summary.tool_cases]
        console.print(fitted_table(console, "Tool-call cases", ["case", "correct", "calls per message (calls:messages)",
                                                                 "messages per trial", "failures"], rows, left_cols=5))
    if summary.bfcl:
        rows = [[b.category, _pct(b.accuracy), _dist_str(b.error_types)] for b in summary.bfcl]
        console.print(fitted_table(console, f"BFCL {summary.bfcl_version}", ["category", "valid", "error types"], rows,
                                   left_cols=3))
    if summary.tasks:
        head = ["task", "pass^k", "passed", "turns", "tool calls", "calls per turn", "completion tok", "wall s",
                "stopped by"]
        console.print(fitted_table(console, "Multi-turn tasks", head, [_task_cells(r) for r in summary.tasks],
                                   left_cols=9))
        nets = {r.network for r in summary.tasks if r.network}
        for n in sorted(nets):
            console.print(f"Sandbox network: {n}", highlight=False)


def _probe_table(summary: AgentSummary, width: int) -> Table:
    """Wide: probe | verdict | evidence. Narrow: the verdict under the probe's name, so the
    evidence gets most of the width (two or three lines, not five)."""
    t = Table(title="Conformance probes", title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
              collapse_padding=True, pad_edge=False)
    narrow = width < 120
    t.add_column("probe / verdict" if narrow else "probe", no_wrap=True)
    if not narrow:
        t.add_column("verdict", no_wrap=True)
    t.add_column("evidence", overflow="fold")
    for p in summary.probes:
        verdict = f"[{_STYLE[p.verdict]}]{_MARK[p.verdict]}[/]"
        if narrow:
            t.add_row(f"{p.probe}\n  {verdict}", p.detail)
        else:
            t.add_row(p.probe, verdict, p.detail)
    return t


def _dist_str(d: dict[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in d.items()) or "–"


def _task_cells(r: TaskScore) -> list[str]:
    """One multi-turn task's row, the same in the terminal and in Markdown."""
    return [r.task, f"{r.pass_hat_k:.2f} (k={r.k})", f"{r.passed}/{r.trials}", _stat(r.turns), _stat(r.tool_calls),
            _dist(r.calls_per_turn), _stat(r.completion_tokens, 0), _stat(r.wall_s), _dist_str(r.stop_reasons)]


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def render_agent_markdown(summary: AgentSummary) -> str:
    if summary.empty:
        return "## Agent readiness\n\nNo agent records in this run.\n"
    out = ["## Agent readiness", ""]
    out += [f"- {line}" for line in _headline(summary)]
    if summary.probes:
        out += ["", "### Conformance probes", "", "| probe | verdict | evidence |", "| --- | --- | --- |"]
        mark = {**_MARK, "silently_ignored": "**SILENTLY IGNORED**", "fail": "**FAIL**"}
        out += [_md_row([p.probe, mark[p.verdict], p.detail]) for p in summary.probes]
    if summary.tool_cases:
        out += [
            "",
            "### Tool-call cases",
            "",
            "| case | correct (± SE) | calls per message (calls:messages) | messages per trial | failures |",
            "| --- | --- | --- | --- | --- |",
        ]
        for c in summary.tool_cases:
            fails = "; ".join(f"{r} (x{n})" for r, n in c.failure_reasons.items()) or "–"
            out.append(
                _md_row(
                    [
                        c.case,
                        _pct(c.accuracy),
                        _dist(c.calls_per_message),
                        _dist(c.messages_per_trial),
                        fails[:160],
                    ]
                )
            )
    if summary.bfcl:
        out += [
            "",
            f"### BFCL {summary.bfcl_version}",
            "",
            "| category | valid (± SE) | error types |",
            "| --- | --- | --- |",
        ]
        out += [_md_row([b.category, _pct(b.accuracy), _dist_str(b.error_types)]) for b in summary.bfcl]
    if summary.tasks:
        out += [
            "",
            "### Multi-turn tasks",
            "",
            "| task | pass^k | passed | turns | tool calls | calls per turn | "
            "completion tokens | wall s | stopped by |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        out += [_md_row(_task_cells(r)) for r in summary.tasks]
        nets = sorted({r.network for r in summary.tasks if r.network})
        out += ["", *[f"Sandbox network: {n}." for n in nets]]
        out += [
            "",
            "Turns, tool calls, tokens and wall time are median ± standard deviation over trials. "
            "A task passes only when rigbench's own pytest run (or answer check) says so.",
        ]
    return "\n".join(out).rstrip() + "\n"
