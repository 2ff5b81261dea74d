"""`rigbench report` and `rigbench ls`: re-render saved runs, list them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, NamedTuple

import typer
from rich.console import Console

from rigbench.analysis import (
    RunAnalysis,
    analyze_run,
    compare_suites,
    summarize_agent,
    summarize_load,
    summarize_quality,
    summarize_speed,
)
from rigbench.cli._app import app
from rigbench.cli._console import make_console
from rigbench.cli._export import check_exports, write_request_exports, write_vllm_json
from rigbench.cli._paths import OutputError, check_output_file, write_output
from rigbench.cli._runs import across_runs, named_runs
from rigbench.errors import StoreError, UsageError
from rigbench.outside import for_console
from rigbench.report import (
    RunListing,
    differences_terminal,
    render_blog_markdown,
    render_json,
    render_markdown,
    render_terminal,
    report_title,
    rig_labels,
    runs_table,
    shift_headings,
    short_answer,
    speedup_table,
    suite_comparison_terminal,
    summary_terminal,
)
from rigbench.store import RunReader

__all__ = ["ReportFiles", "ls", "report", "report_runs"]


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN...", help="Run directories (or plan directories) to render; with "
                                               "several, the first is the baseline of the speed-up table.")],
    html: Annotated[Path | None, typer.Option(metavar="FILE", help="Write a self-contained HTML report (tables, plots, "
                                              "fingerprints) to this file.")] = None,
    markdown: Annotated[Path | None, typer.Option(metavar="FILE", help="Write the Markdown report to this file.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", metavar="FILE", help="Write the analysed runs as JSON here.")] = None,
    vllm_json: Annotated[Path | None, typer.Option(metavar="FILE", help="Write the first run's speed or load requests as "
                                                   "the JSON `vllm bench serve --save-result --save-detailed` writes "
                                                   "(one file per load window: FILE-STEM.<window>.json; field "
                                                   "mapping: docs/metrics.md).")] = None,
    csv: Annotated[Path | None, typer.Option(metavar="FILE", help="Write one CSV row per request of every run (intended start, "
                                             "send, first token, end, tokens, TTFT, ITL, error).")] = None,
    jsonl: Annotated[Path | None, typer.Option(metavar="FILE", help="Write one JSON line per request of every run (the --csv "
                                               "fields).")] = None,
    paths: Annotated[bool, typer.Option("--paths", metavar="", help="Keep home-directory and temporary paths and local "
                                        "ports in the Markdown and HTML reports (hidden by default).")] = False,
) -> None:
    """Show saved runs (complete or not) in the terminal, and write them as files: Markdown, HTML, JSON,
    vLLM-style JSON, per-request CSV or JSON lines."""
    files = ReportFiles(html, markdown, json_out, vllm_json, csv, jsonl, paths)
    files.check()
    report_runs(runs, make_console(), files)


class ReportFiles(NamedTuple):
    """The files `rigbench report` (and `rigbench run`) write besides the terminal report."""

    html: Path | None = None
    markdown: Path | None = None
    json_out: Path | None = None
    vllm_json: Path | None = None
    csv: Path | None = None
    jsonl: Path | None = None
    paths: bool = False  # keep home-directory and temporary paths and local ports

    @staticmethod
    def option(name: str) -> str:
        """The option that gives the file of field `name`."""
        return "--json" if name == "json_out" else "--" + name.replace("_", "-")

    def check(self) -> None:
        """Before anything is measured or read: each path can be written."""
        for name, path in self._asdict().items():
            if name != "paths":
                check_output_file(path, self.option(name))


def report_runs(runs: list[Path], console: Console, files: ReportFiles, *, terminal: bool = True) -> list[RunAnalysis]:
    """`rigbench report RUN...`: each run in the terminal (unless `terminal` is False), the runs against the
    first, the files asked for, and a summary as the last lines. Returns the runs' analyses."""
    named = named_runs(runs)
    runs = [p for _, p in named]
    paths = files.paths
    # an export that would hold nothing is refused, naming the run kind, before any file is written
    check_exports([RunReader(p) for p in runs], csv=files.csv, jsonl=files.jsonl, vllm_json=files.vllm_json)
    analyses = []
    for run_dir in runs:
        a = analyze_run(RunReader(run_dir))
        analyses.append(a)
        if terminal:
            render_terminal(a, console)
            console.print()
    names = rig_labels([n for n, _ in named], [a.header for a in analyses])
    across = len(runs) > 1 and bool(terminal or files.html or files.markdown)
    comparisons, revisions = across_runs(names, runs, analyses) if across else ([], [])
    suites = [compare_suites(RunReader(runs[0]), RunReader(p)) for p in runs[1:]] if across else []
    if len(runs) > 1 and terminal:  # across the runs: speed-up, then quality and agent, each against the first
        console.rule(f"{len(runs)} runs against {for_console(names[0])}")
        differences_terminal(console, names, [a.header for a in analyses])
        if comparisons:
            console.print(speedup_table(names, analyses, comparisons))
        for name, sc in zip(names[1:], suites, strict=True):
            suite_comparison_terminal(sc, console, baseline=names[0], other=name)
    written: list[tuple[str, str]] = []
    failed: list[OutputError] = []

    def write(what: str, path: Path, option: str, text: Callable[[], str | Iterable[str]]) -> None:
        """One file; a failure is kept for the end, and the other files are written all the same."""
        try:
            write_output(path, text(), option)
        except OutputError as e:
            failed.append(e)
        else:
            written.append((what, str(path)))

    if files.html:
        # lazy: start-up; render_html loads matplotlib (~0.6 s)
        from rigbench.report import render_html

        write("HTML report", files.html, "--html",
              lambda: render_html(names, analyses, comparisons, revisions, suites, paths=paths))
    if files.markdown:
        if len(runs) > 1:  # the blog-ready comparison first, then each run in full, one level below its H1
            md_parts = [render_blog_markdown(names, analyses, comparisons, revisions, suites, paths=paths)]
            md_parts += [shift_headings(render_markdown(a, paths=paths, title=f"{n}: {report_title([a.header])}"), 1)
                         for n, a in zip(names, analyses, strict=True)]
        else:
            md_parts = [render_markdown(a, paths=paths) for a in analyses]
        write("Markdown report", files.markdown, "--markdown", lambda: "\n\n".join(md_parts))
    if files.vllm_json:
        try:
            written += write_vllm_json(RunReader(runs[0]), files.vllm_json)
        except OutputError as e:
            failed.append(e)
    exported, export_failed = write_request_exports([RunReader(p) for p in runs], csv=files.csv, jsonl=files.jsonl,
                                                    console=console)
    written += exported
    failed += export_failed
    if files.json_out:
        json_parts = [render_json(a) for a in analyses]
        write("JSON", files.json_out, "--json",
              lambda: json_parts[0] if len(json_parts) == 1 else "[\n" + ",\n".join(json_parts) + "\n]")
    summary_terminal(console, names, analyses, written)
    if failed:
        raise _not_written(failed, runs)
    return analyses


def _not_written(failed: list[OutputError], runs: list[Path]) -> UsageError:
    """One error for the files that could not be written: each with its reason, and the command that writes
    them again from the runs, which are kept whatever happened to their exports."""
    again = " ".join(f"{e.option} FILE" for e in failed)
    lines = [f"  {e.option} {e.path}: {e.reason}" for e in failed]
    return UsageError(f"{len(failed)} of the files asked for could not be written; the run data is kept and "
                      f"`rigbench report {' '.join(str(p) for p in runs)} {again}` writes them elsewhere:\n"
                      + "\n".join(lines))


@app.command("ls")
def ls(
    out: Annotated[Path, typer.Argument(help="Directory holding run directories.")] = Path("runs"),
) -> None:
    """List saved runs, one row each: verdict, model and headline figure (at 150 columns: date, engine, suites,
    status and source data too)."""
    console = make_console()
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is a file, not a directory of runs; give the directory that holds run directories "
                         "(default ./runs).")
    if not out.is_dir():
        console.print(f"no runs: {for_console(out)} does not exist (runs are saved under ./runs by default).")
        return
    listed: list[RunListing] = []
    for d in sorted(p for p in out.iterdir() if p.is_dir()):
        try:
            r = RunReader(d)
        except StoreError:
            continue
        h = r.header
        fp = h.fingerprint
        model = (fp.model.served_name or Path(fp.model.path or "?").name) if fp is not None else "?"
        verdict = ("DAMAGED" if r.damage else "–" if h.trust is None
                   else "trusted" if h.trust.trusted else "UNTRUSTED")
        quality, agent = summarize_quality(r), summarize_agent(r)
        headline = short_answer(summarize_speed(r), summarize_load(r), None if quality.empty else quality,
                                None if agent.empty else agent)
        listed.append(RunListing(d.name, h.created_at, fp.engine if fp is not None else "?", model,
                                 ",".join((h.plan.get("suites") or {}).keys()), r.display_status, verdict,
                                 r.source_data_id, headline))
    console.print(runs_table(f"runs in {out}", listed, console.width))
