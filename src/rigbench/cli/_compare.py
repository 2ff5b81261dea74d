"""`rigbench compare BASELINE OTHER...`: speed ratios with error, scenario by scenario, then quality and
agent results side by side, each with a three-way verdict: same within ±margin (an equivalence test),
differs (a significance test), or inconclusive (with the repetitions that would tell)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigbench.analysis import (
    DEFAULT_MARGIN,
    busy_windows,
    check_two_runs,
    compare_load,
    compare_runs,
    compare_suites,
    fit_speculation,
    summarize_load,
    summarize_speed,
)
from rigbench.cli._app import app
from rigbench.cli._console import make_console
from rigbench.cli._paths import check_output_file, write_output
from rigbench.errors import UsageError
from rigbench.outside import for_console
from rigbench.report import (
    comparison_markdown,
    comparison_terminal,
    load_comparison_markdown,
    load_comparison_terminal,
    rig_labels,
    speculates,
    speculation_markdown,
    speculation_terminal,
    speculation_unknown,
    suite_comparison_markdown,
    suite_comparison_terminal,
    synth_mark,
    synth_note,
    synthetic_acceptance,
)
from rigbench.store import RunReader

__all__ = ["compare"]


@app.command()
def compare(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN...", help="Baseline run first, then the runs to compare with it.")],
    metric: Annotated[str, typer.Option(help="e2e_tok_s, decode_tok_s, aggregate_tok_s or ttft_s.")] = "e2e_tok_s",
    alpha: Annotated[float, typer.Option(help="Significance level of the tests (difference and equivalence).")] = 0.05,
    margin: Annotated[float, typer.Option(help="Equivalence margin in percent: 'same within ±5%' for a speed "
                                          "ratio, ±5 points for an accuracy.")] = DEFAULT_MARGIN * 100,
    allow_mismatch: Annotated[bool, typer.Option("--allow-mismatch", metavar="", help="Compare runs whose rigs differ in model, engine "
                                                 "version or host (the differences are listed).")] = False,
    markdown: Annotated[Path | None, typer.Option(help="Also write the tables as Markdown here.")] = None,
) -> None:
    """Compare runs with a baseline, scenario by scenario and suite by suite: 'same within ±M%' when an
    equivalence test says so, 'differs' when a significance test does, else 'inconclusive', with about how
    many repetitions per side would tell."""
    if len(runs) < 2:
        raise UsageError("give a baseline run and at least one run to compare with it.")
    if not 0.0 < alpha < 1.0:  # nan fails this too
        raise UsageError(f"--alpha is a significance level in (0, 1), e.g. 0.05; got {alpha!r}.")
    if not 0.0 < margin < 100.0:  # nan fails this too
        raise UsageError(f"--margin is a percentage in (0, 100), e.g. 5 for ±5%; got {margin!r}.")
    check_output_file(markdown, "--markdown")
    readers = [RunReader(r) for r in runs]
    for other in readers[1:]:
        check_two_runs(readers[0], other)
    labels = dict(zip((r.dir.name for r in readers), rig_labels([r.dir.name for r in readers],
                                                                [r.header for r in readers]), strict=True))
    synthetic = {r.dir.name: synth_note(r.header) for r in readers if synthetic_acceptance(r.header) is not None}
    console = make_console()
    md = []
    for msg in _busy_notes(readers, labels):  # said before any ratio
        console.print(f"[yellow]{for_console(msg)}[/]")
        md.append(f"> {msg}")
    with_speed = [r for r in readers if summarize_speed(r) is not None]
    if readers[0] in with_speed and len(with_speed) > 1:
        result = compare_runs(readers[0], with_speed[1:], metric=metric, alpha=alpha, allow_mismatch=allow_mismatch,
                              margin=margin / 100)
        comparison_terminal(result, console, labels, synthetic)
        md.append(comparison_markdown(result, labels, synthetic))
    without = [r.dir.name for r in readers if r not in with_speed]
    if without:
        console.print(f"[dim]no speed records in {for_console(', '.join(without))}: speed not compared for "
                      f"{'it' if len(without) == 1 else 'them'}.[/]")
    for other in readers[1:]:
        if other not in with_speed or readers[0] not in with_speed:
            continue
        why = speculation_unknown(other.header)
        if why is not None:  # said, not skipped in silence: it may have drafted, and nothing shows whether
            msg = (f"{labels[other.dir.name]}: whether this rig drafted tokens is unknown ({why}), so no "
                   "speculative speed-up prediction is made for it. A server whose metrics or status show its "
                   "drafting, or a rig rigbench launched, tells.")
            console.print(f"[yellow]{for_console(msg)}[/]")
            md.append(f"> {msg}")
            continue
        if not speculates(other.header):
            continue
        fit = fit_speculation(readers[0], other)
        if fit is None:
            continue
        name = labels[other.dir.name] + synth_mark(other.header)  # its measured speed-ups are synthetic too
        speculation_terminal(name, fit, console)
        md.append(speculation_markdown(name, fit))
    base_load = summarize_load(readers[0])
    for other in readers[1:]:  # rate-mode runs at equal offered rate
        other_load = summarize_load(other)
        if base_load is not None and other_load is not None and base_load.rates and other_load.rates:
            cmp = compare_load(base_load, other_load, alpha=alpha)
            names = (labels[readers[0].dir.name], labels[other.dir.name])
            load_comparison_terminal(cmp, console, *names)
            md.append(load_comparison_markdown(cmp, *names))
    for other in readers[1:]:  # quality and agent next to speed
        suites = compare_suites(readers[0], other, margin=margin / 100)
        a, b = labels[readers[0].dir.name], labels[other.dir.name]
        suite_comparison_terminal(suites, console, baseline=a, other=b)
        if not suites.empty:
            md.append(suite_comparison_markdown(suites, baseline=a, other=b))
    if markdown:
        write_output(markdown, "\n\n".join(md) + "\n", "--markdown")


def _busy_notes(readers: list[RunReader], labels: dict[str, str]) -> list[str]:
    """One note per side that measured windows on a busy host: its figures hold the host's load."""
    out = []
    for r in readers:
        busy = busy_windows(r)
        if busy:
            shown = "; ".join(busy[:2]) + (f"; and {len(busy) - 2} more" if len(busy) > 2 else "")
            out.append(f"{labels[r.dir.name]} measured {len(busy)} window{'s' if len(busy) > 1 else ''} on a busy "
                       f"host ({shown}): its figures hold the host's load, not its rig alone, so a difference below "
                       "may be the host's. Measure both on a quiet host to compare the rigs.")
    return out
