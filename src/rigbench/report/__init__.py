"""Reports: terminal (rich), Markdown, JSON and HTML renderings of analysed runs."""

from typing import TYPE_CHECKING, Any

from rigbench.report._answer import short_answer
from rigbench.report._blog import render_blog_markdown, speedup_table
from rigbench.report._checks import preflight_terminal
from rigbench.report._comparison import comparison_markdown, comparison_terminal
from rigbench.report._differences import differences_terminal
from rigbench.report._hardware import (
    kv_terminal,
    roofline_terminal,
    speculation_markdown,
    speculation_terminal,
)
from rigbench.report._labels import (
    rig_labels,
    speculates,
    speculation_unknown,
    synth_mark,
    synth_note,
    synthetic_acceptance,
)
from rigbench.report._load import load_comparison_markdown, load_comparison_terminal
from rigbench.report._ls import RunListing, runs_table
from rigbench.report._publish import report_title
from rigbench.report._run import render_json, render_markdown, render_terminal, shift_headings
from rigbench.report._speed import NOT_COMPARABLE, speed_markdown, speed_table
from rigbench.report._suite_compare import suite_comparison_markdown, suite_comparison_terminal
from rigbench.report._summary import summary_terminal
from rigbench.report._vllm_export import vllm_detailed_result

__all__ = [
    "NOT_COMPARABLE",
    "RunListing",
    "comparison_markdown",
    "comparison_terminal",
    "differences_terminal",
    "kv_terminal",
    "load_comparison_markdown",
    "load_comparison_terminal",
    "preflight_terminal",
    "render_blog_markdown",
    "render_html",
    "render_json",
    "render_markdown",
    "render_terminal",
    "report_title",
    "rig_labels",
    "roofline_terminal",
    "runs_table",
    "shift_headings",
    "short_answer",
    "speculates",
    "speculation_markdown",
    "speculation_terminal",
    "speculation_unknown",
    "speed_markdown",
    "speed_table",
    "speedup_table",
    "suite_comparison_markdown",
    "suite_comparison_terminal",
    "summary_terminal",
    "synth_mark",
    "synth_note",
    "synthetic_acceptance",
    "vllm_detailed_result",
]

if TYPE_CHECKING:
    from rigbench.report._html import render_html


def __getattr__(name: str) -> Any:
    # The HTML report draws with matplotlib, which costs a second to import: only the commands
    # that write HTML pay for it.
    if name == "render_html":
        from rigbench.report._html import render_html

        return render_html
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
