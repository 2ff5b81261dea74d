"""The withheld-TTFT marker (chunks carried several tokens: RequestTiming.ttft_not_comparable) reads the same in every
place a user sees it: terminal, Markdown, HTML (the run's tables and the run-by-run table), the latency plot and the
progress line, each with its meaning said beside it. It was spelled three ways ("n/c*", "n/c", "(n/c)")."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from rigbench.analysis import RunAnalysis, analyze_run
from rigbench.cli._progress import live_figures
from rigbench.records import StreamResult
from rigbench.report import NOT_COMPARABLE, render_html, render_markdown, render_terminal
from rigbench.report._plots import plot_latency
from rigbench.report._speed import NC_NOTE
from rigbench.store import RunReader

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
OTHER_SPELLING = re.compile(r"n/c(?!\*)")  # "n/c" without its star
REASON = "chunks carry 2.00 tokens on average (speculative decoding?)"


def _speculative() -> RunAnalysis:
    """A golden run whose first row streamed two tokens per chunk: its TTFT withheld."""
    a = analyze_run(RunReader(GOLDEN / "emulator_a"))
    assert a.speed is not None and a.speed.rows
    rows = [a.speed.rows[0].model_copy(update={"ttft_s": None, "ttft_not_comparable": REASON}), *a.speed.rows[1:]]
    return a.model_copy(update={"speed": a.speed.model_copy(update={"rows": rows})})


def test_one_marker_with_its_meaning_in_every_report() -> None:
    a = _speculative()
    console = Console(file=io.StringIO(), width=200, color_system=None, legacy_windows=False)
    render_terminal(a, console)
    for name, text in (("terminal", console.file.getvalue()),  # type: ignore[attr-defined]
                       ("markdown", render_markdown(a).replace("\\*", "*")),  # Markdown escapes the star
                       ("html, two runs", render_html(["a", "b"], [a, a]))):
        assert NOT_COMPARABLE in text, name
        assert NC_NOTE in text.replace("\n", " "), name
        assert not OTHER_SPELLING.search(text), (name, OTHER_SPELLING.search(text))


def test_the_latency_plot_labels_the_row_with_the_marker() -> None:
    a = _speculative()
    plot = plot_latency(["a"], [a])
    assert plot is not None
    assert f"({NOT_COMPARABLE})" in plot and not OTHER_SPELLING.search(plot)


def test_the_progress_line_uses_the_marker() -> None:
    ms = 1_000_000
    res = StreamResult(sent_ns=0, done_ns=400 * ms, chunk_ns=[100 * ms, 200 * ms, 300 * ms], chunk_chars=[4, 4, 4],
                       chunk_kind="ccc", usage={"prompt_tokens": 5, "completion_tokens": 6}, http_status=200)
    assert live_figures(res).endswith(f"TTFT {NOT_COMPARABLE}")
