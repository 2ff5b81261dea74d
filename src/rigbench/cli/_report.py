"""`rigbench report` and `rigbench ls`: re-render saved runs, list them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from rigbench.analysis import analyze_run, compare_suites
from rigbench.cli._app import app
from rigbench.cli._console import make_console
from rigbench.cli._export import write_request_exports
from rigbench.cli._paths import check_output_file, write_output
from rigbench.errors import StoreError, UsageError
from rigbench.outside import for_console
from rigbench.records import SpeedRequest
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
    speedup_table,
    suite_comparison_terminal,
    summary_terminal,
    vllm_detailed_result,
)
from rigbench.store import RunReader

__all__ = ["ls", "report"]


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (or plan directories) to render; with "
                                               "several, the first is the baseline of the speed-up table.")],
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML report (tables, plots, "
                                              "fingerprints) to this file.")] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write the Markdown report to this file.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the analysed run as JSON here.")] = None,
    vllm_json: Annotated[Path | None, typer.Option(help="Write the first run's speed requests as the JSON "
                                                   "`vllm bench serve --save-result --save-detailed` writes "
                                                   "(field mapping: docs/metrics.md).")] = None,
    csv: Annotated[Path | None, typer.Option(help="Write one CSV row per request of every run (intended start, "
                                             "send, first token, end, tokens, TTFT, ITL, error).")] = None,
    jsonl: Annotated[Path | None, typer.Option(help="Write one JSON line per request of every run (the --csv "
                                               "fields).")] = None,
    paths: Annotated[bool, typer.Option("--paths", help="Keep home-directory and temporary paths and local "
                                        "ports in the Markdown and HTML reports (hidden by default).")] = False,
) -> None:
    """Re-render saved runs (complete or not) in the terminal, and optionally as Markdown, HTML, JSON
    or vLLM-style JSON."""
    console = make_console()
    # lazy: start-up; cli._plan loads rigbench.plan and every suite (~0.3 s)
    from rigbench.cli._plan import across_runs, named_runs

    for path, option in ((html, "--html"), (markdown, "--markdown"), (json_out, "--json"), (vllm_json, "--vllm-json"),
                         (csv, "--csv"), (jsonl, "--jsonl")):
        check_output_file(path, option)

    named = named_runs(runs)
    runs = [p for _, p in named]
    md_parts: list[str] = []
    json_parts: list[str] = []
    analyses = []
    for run_dir in runs:
        a = analyze_run(RunReader(run_dir))
        analyses.append(a)
        render_terminal(a, console)
        console.print()
        md_parts.append(render_markdown(a, paths=paths))
        json_parts.append(render_json(a))
    names = rig_labels([n for n, _ in named], [a.header for a in analyses])
    if len(runs) > 1:  # each run one level below the document's H1, under its label
        md_parts = [shift_headings(render_markdown(a, paths=paths, title=f"{n}: {report_title([a.header])}"), 1)
                    for n, a in zip(names, analyses, strict=True)]
    comparisons, revisions = across_runs(names, runs, analyses) if len(runs) > 1 else ([], [])
    suites = [compare_suites(RunReader(runs[0]), RunReader(p)) for p in runs[1:]]
    if len(runs) > 1:  # across the runs: speed-up, then quality and agent, each against the first
        console.rule(f"{len(runs)} runs against {for_console(names[0])}")
        differences_terminal(console, names, [a.header for a in analyses])
        if comparisons:
            console.print(speedup_table(names, analyses, comparisons))
        for name, sc in zip(names[1:], suites, strict=True):
            suite_comparison_terminal(sc, console, baseline=names[0], other=name)
        # the blog-ready comparison first, then each run in full
        md_parts.insert(0, render_blog_markdown(names, analyses, comparisons, revisions, suites, paths=paths))
    files: list[tuple[str, str]] = []
    if html:
        # lazy: start-up; render_html loads matplotlib (~0.6 s)
        from rigbench.report import render_html

        write_output(html, render_html(names, analyses, comparisons, revisions, suites, paths=paths))
        files.append(("HTML report", str(html)))
    if markdown:
        write_output(markdown, "\n\n".join(md_parts))
        files.append(("Markdown report", str(markdown)))
    if vllm_json:
        reqs = RunReader(runs[0]).records("speed_request", SpeedRequest)
        write_output(vllm_json, json.dumps(vllm_detailed_result(reqs), indent=1))
        files.append(("vLLM-style detailed JSON", str(vllm_json)))
    write_request_exports([RunReader(p) for p in runs], csv=csv, jsonl=jsonl, console=console)
    if json_out:
        write_output(json_out, json_parts[0] if len(json_parts) == 1 else "[\n" + ",\n".join(json_parts) + "\n]")
        files.append(("JSON", str(json_out)))
    summary_terminal(console, names, analyses, files)


@app.command("ls")
def ls(
    out: Annotated[Path, typer.Argument(help="Directory holding run directories.")] = Path("runs"),
) -> None:
    """List saved runs with model, engine, date, suites and status."""
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
        listed.append(RunListing(d.name, h.created_at, fp.engine if fp is not None else "?", model,
                                 ",".join((h.plan.get("suites") or {}).keys()), r.display_status, verdict,
                                 r.source_data_id))
    console.print(runs_table(f"runs in {out}", listed, console.width))
