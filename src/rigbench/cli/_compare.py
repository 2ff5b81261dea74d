"""`rigbench compare BASELINE OTHER...`: ratios with error and Welch t-tests, scenario by scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown

from rigbench.analysis._compare import compare_runs
from rigbench.analysis._speculation import fit_speculation
from rigbench.cli._app import app
from rigbench.errors import UsageError
from rigbench.report._honesty import comparison_markdown, comparison_terminal, speculation_markdown
from rigbench.store import RunReader

__all__ = ["compare"]


@app.command()
def compare(
    runs: Annotated[list[Path], typer.Argument(help="Baseline run first, then the runs to compare with it.")],
    metric: Annotated[str, typer.Option(help="e2e_tok_s, decode_tok_s, aggregate_tok_s or ttft_s.")] = "e2e_tok_s",
    alpha: Annotated[float, typer.Option(help="Significance level of the Welch t-test.")] = 0.05,
    allow_mismatch: Annotated[bool, typer.Option(help="Compare runs whose rigs differ in model, engine "
                                                 "version or host (the differences are listed).")] = False,
    markdown: Annotated[Path | None, typer.Option(help="Also write the tables as Markdown here.")] = None,
) -> None:
    """'reproduces' when the t-test finds no significant difference, 'differs' when it does."""
    if len(runs) < 2:
        raise UsageError("give a baseline run and at least one run to compare with it.")
    if not 0.0 < alpha < 1.0:  # nan fails this too
        raise UsageError(f"--alpha is a significance level in (0, 1), e.g. 0.05; got {alpha!r}.")
    from rigbench.cli._paths import check_output_file

    check_output_file(markdown, "--markdown")
    readers = [RunReader(r) for r in runs]
    result = compare_runs(readers[0], readers[1:], metric=metric, alpha=alpha, allow_mismatch=allow_mismatch)
    console = Console()
    comparison_terminal(result, console)
    md = [comparison_markdown(result)]
    for other in readers[1:]:
        if not (other.header.fingerprint or {}).get("speculative"):
            continue
        fit = fit_speculation(readers[0], other)
        if fit is None:
            continue
        text = speculation_markdown(other.header.run_id, fit)
        console.print(Markdown(text))
        md.append(text)
    if markdown:
        markdown.write_text("\n\n".join(md) + "\n")
