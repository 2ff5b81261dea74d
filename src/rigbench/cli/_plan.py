"""`rigbench run PLAN.yaml`: run a plan's rigs in turn, then print the comparison tables."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from rigbench.analysis import Comparison, RunAnalysis, analyze_run, compare_runs, find_revisions
from rigbench.cli._console import make_console
from rigbench.cli._paths import OutputError, write_output
from rigbench.cli._progress import RichProgress
from rigbench.cli._report import ReportFiles, report_runs
from rigbench.cli._signals import interrupt_exit_code, interrupt_name, run_stoppable
from rigbench.errors import BusyHostError, UsageError
from rigbench.outside import for_console, visible
from rigbench.plan import PlanIndex, execute_plan, load_plan, plan_runs
from rigbench.report import render_blog_markdown, speedup_table
from rigbench.scale import execute_plan_on_ray
from rigbench.store import new_run_id

__all__ = ["plan_analyses", "run_plan"]


def plan_analyses(plan_dir: Path) -> tuple[list[str], list[RunAnalysis], list[Comparison]]:
    """Names and analyses of a plan's rigs that have a run, and each against the first one."""
    names: list[str] = []
    analyses: list[RunAnalysis] = []
    readers = []
    for entry, reader in plan_runs(plan_dir):
        if reader is None:
            continue
        names.append(entry.name)
        analyses.append(analyze_run(reader))
        readers.append(reader)
    comparisons: list[Comparison] = []
    if len(readers) > 1 and analyses[0].speed is not None and all(a.speed for a in analyses):
        # the rigs differ on purpose (flags, even engines): differences are shown, not refused
        comparisons = compare_runs(readers[0], readers[1:], allow_mismatch=True)
    return names, analyses, comparisons


def _status_table(index: PlanIndex) -> Table:
    # names and directories as text, not markup: a plan and its rigs are named by whoever wrote the file
    t = Table(title=Text(visible(f"plan {index.name}")), title_justify="left")
    for col in ("rig", "kind", "status", "verdict", "run directory", "source data"):
        t.add_column(col, overflow="fold")
    for e in index.rigs:
        verdict = "–" if e.trusted is None else ("trusted" if e.trusted else "UNTRUSTED")
        style = "green" if e.status == "complete" else "bold red" if e.status == "failed" else "yellow"
        t.add_row(Text(visible(e.name)), e.kind, Text(e.status, style=style), verdict, Text(visible(e.run_dir or "–")),
                  e.source_data_id or "–")
    return t


def run_plan(plan_file: Path, *, resume: Path | None, out: Path, markdown: Path | None,
             allow_untrusted: bool, ray: str | None = None, files: ReportFiles | None = None) -> None:
    """`files`: HTML, JSON and per-request files of the plan's runs, as `rigbench report PLAN_DIR` writes
    them (the Markdown is the plan's comparison post)."""
    console = make_console()
    loaded = load_plan(plan_file)
    plan_dir = resume or out / new_run_id(f"plan-{loaded.plan.name}")
    console.print(f"plan [bold]{for_console(loaded.plan.name)}[/]: {len(loaded.rigs)} rig(s) -> {for_console(plan_dir)}")

    def announce(name: str, i: int, n: int) -> None:
        console.rule(f"rig {i + 1}/{n}: {for_console(name)}")

    with RichProgress(console) as prog:
        try:
            if ray is not None:  # each rig a Ray task on a node that has its resources (docs/scale-out.md)
                index = run_stoppable(execute_plan_on_ray(loaded, plan_dir, address=ray, resume=resume is not None,
                                                     progress=prog, on_rig=announce))
            else:
                index = run_stoppable(execute_plan(loaded, plan_dir, resume=resume is not None, progress=prog,
                                              build_progress=prog.build, on_rig=announce))
        except KeyboardInterrupt:
            console.print(f"[yellow]interrupted ({interrupt_name()}): completed rigs and the partial run are kept; continue with "
                          f"`rigbench run {for_console(plan_file)} --resume {for_console(plan_dir)}`[/]")
            raise typer.Exit(interrupt_exit_code()) from None
        except BusyHostError as busy:
            make_console(stderr=True).print(
                f"[bold red]stopped:[/] {for_console(busy, multiline=True)} Completed rigs are kept; continue with "
                f"`rigbench run {for_console(plan_file)} --resume {for_console(plan_dir)}`.", highlight=False,
                soft_wrap=True)
            raise typer.Exit(1) from None
    console.print(_status_table(index))
    for e in index.rigs:
        if e.error:
            console.print(f"[red]{for_console(e.name)}: {for_console(e.error, multiline=True)}[/]", highlight=False)
    names, analyses, comparisons = plan_analyses(plan_dir)
    if comparisons:
        console.print(speedup_table(names, analyses, comparisons))
        console.print(f"[dim]Per-scenario tests with all figures: rigbench compare "
                      f"{for_console(plan_dir / analyses[0].header.run_id)} {for_console(plan_dir / analyses[1].header.run_id)}[/]")
    elif len(names) < 2:
        console.print("[yellow]fewer than two rigs have results: no comparison table[/]")
    else:
        console.print("[yellow]not every rig has speed results: no speed-up table[/]")
    for a, n in zip(analyses, names, strict=True):
        for w in a.warnings:
            console.print(f"[yellow]! {for_console(n)}: {for_console(w, multiline=True)}[/]", highlight=False)
    not_written: UsageError | None = None
    if markdown and analyses:
        try:
            write_output(markdown, render_blog_markdown(names, analyses, comparisons, find_revisions(names, analyses)),
                         "--markdown")
        except OutputError as e:  # said at the end, after the other files: the plan's runs are kept
            not_written = UsageError(f"{e} The plan's runs are kept: `rigbench report {plan_dir} --markdown FILE` "
                                     "writes the comparison again.")
        else:
            console.print(f"Markdown report: {for_console(markdown)}")
    console.print(f"plan directory: {for_console(plan_dir)}  (index: {for_console(plan_dir / 'plan.json')})")
    if analyses:  # the last lines: each rig's verdict and figures, and where the files are
        console.print()
        report_runs([plan_dir], console, (files or ReportFiles())._replace(markdown=None), terminal=False)
    if not_written is not None:
        raise not_written
    bad = [e for e in index.rigs if e.status != "complete"]
    untrusted = [e for e in index.rigs if e.trusted is False]
    if bad or (untrusted and not allow_untrusted):
        make_console(stderr=True).print(f"[bold red]{len(bad)} rig(s) did not complete, {len(untrusted)} untrusted; "
                                   "exiting 1.[/]")
        raise typer.Exit(1)

