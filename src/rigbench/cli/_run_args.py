"""Every option of `rigbench run`, typed and declared once: the plan's settings (`plan.RunOptions`, with
the rig's flags) and the options that only say where output goes, how to exit, what to resume and
how to spread the run. The command is made from these fields (cli/_typed.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from rigbench.plan import RunOptions
from rigbench.rig import Flag

__all__ = ["CLI_ONLY_OPTIONS", "RunArgs"]


class RunArgs(RunOptions):
    """`rigbench run`'s options: the settings that make its plan, then the run's own."""

    plan: Annotated[Path | None, Flag(
        "A plan file (YAML): run each of its rigs in turn and compare them (docs/plans.md). With "
        "--resume, the plan directory to continue.",
        argument=True, metavar="PLAN")] = None
    out: Annotated[Path, Flag(
        "Directory holding run directories.",
        metavar="DIR", rich_help_panel="Output and verdict")] = Path("runs")
    label: Annotated[str, Flag(
        "Label in the run directory's name.",
        metavar="TEXT", rich_help_panel="Output and verdict")] = "run"
    allow_untrusted: Annotated[bool, Flag(
        "Exit 0 even when the run is marked untrusted.",
        "--allow-untrusted", metavar="", rich_help_panel="Output and verdict")] = False
    resume: Annotated[Path | None, Flag(
        "Continue an interrupted run directory: completed units are not redone.",
        metavar="DIR", rich_help_panel="Resume")] = None
    retry_failed: Annotated[bool, Flag(
        "With --resume: also redo every failed request (any reason, e.g. HTTP 503), in a finished "
        "run too.",
        "--retry-failed", metavar="", rich_help_panel="Resume")] = False
    markdown: Annotated[Path | None, Flag(
        "Also write the Markdown report here (as `rigbench report --markdown`).",
        metavar="FILE", rich_help_panel="Output and verdict")] = None
    ray: Annotated[str | None, Flag(
        "Run on a Ray cluster: auto, local or the head's HOST:PORT (needs pip install "
        "rigbench\\[ray]). A plan's rigs become tasks; with --endpoint, --clients spreads the speed "
        "load (docs/scale-out.md).",
        "--ray", metavar="ADDR", rich_help_panel="Scale-out")] = None
    clients: Annotated[int, Flag(
        "Client actors driving the speed load, or one --rate/--sweep schedule split over them (with --ray "
        "and --endpoint).",
        min=1, metavar="N", rich_help_panel="Scale-out")] = 1
    csv: Annotated[Path | None, Flag(
        "Also write one CSV row per request (intended start, send, first token, end, tokens, TTFT, "
        "ITL, error).",
        metavar="FILE", rich_help_panel="Output and verdict")] = None
    jsonl: Annotated[Path | None, Flag(
        "Also write one JSON line per request (the --csv fields).",
        metavar="FILE", rich_help_panel="Output and verdict")] = None
    html: Annotated[Path | None, Flag(
        "Also write the self-contained HTML report here (as `rigbench report --html`).",
        metavar="FILE", rich_help_panel="Output and verdict")] = None
    json_out: Annotated[Path | None, Flag(
        "Also write the analysed run as JSON here (as `rigbench report --json`).",
        "--json", metavar="FILE", rich_help_panel="Output and verdict")] = None


# Options that are not settings of the measured plan (`RunArgs` adds them to `RunOptions`).
CLI_ONLY_OPTIONS = frozenset(RunArgs.model_fields) - frozenset(RunOptions.model_fields)
