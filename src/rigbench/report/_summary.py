"""The few lines a terminal report ends on, so that the answer is on screen when the tables have
scrolled away: each run's verdict and its answer (report/_answer.py, as lines), and where the files are."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from rigbench.analysis import RunAnalysis
from rigbench.outside import visible
from rigbench.report._answer import answer_lines

__all__ = ["summary_terminal"]


def summary_terminal(console: Console, names: Sequence[str], analyses: Sequence[RunAnalysis],
                     files: Sequence[tuple[str, str]] = ()) -> None:
    """`files`: (what, path) of the reports written."""
    console.rule("Summary", align="left")
    for n, a in zip(names, analyses, strict=True):
        t = a.header.trust
        verdict, style = (("not assessed", "yellow") if t is None else ("trusted", "green") if t.trusted
                          else ("UNTRUSTED", "bold red"))
        reasons = sum(1 for w in a.warnings if w.startswith(("UNTRUSTED", "DAMAGED")))
        line = Text.assemble((visible(n), "bold"), f" ({a.status}): ", (verdict, style),
                             f" ({reasons} reason{'s' if reasons != 1 else ''}, listed above)" if reasons else "")
        console.print(line, highlight=False)
        for figures in answer_lines(a):
            console.print(Text("  " + visible(figures)), highlight=False)
        console.print(Text(f"  run directory: {visible(a.run_dir)}", style="dim"), highlight=False)
    for what, path in files:
        console.print(Text(f"{what}: {visible(path)}"), highlight=False)
