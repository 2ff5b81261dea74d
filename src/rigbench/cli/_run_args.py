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
        "A plan file (YAML): run each of its rigs in turn and compare them (docs/plans.md). With --resume, the "
        "plan directory to continue.", argument=True)] = None
    out: Annotated[Path, Flag("Directory holding run directories.")] = Path("runs")
    label: Annotated[str, Flag("Label used in the run directory's name.")] = "run"
    allow_untrusted: Annotated[bool, Flag("Exit 0 even when the run is marked untrusted.")] = False
    resume: Annotated[Path | None, Flag(
        "Continue an interrupted run directory: completed units are not redone.")] = None
    retry_failed: Annotated[bool, Flag(
        "With --resume: also redo every request that failed (any reason, e.g. HTTP 503), in a finished run too; "
        "says how many.", "--retry-failed")] = False
    markdown: Annotated[Path | None, Flag("Also write the Markdown report here.")] = None
    ray: Annotated[str | None, Flag(
        "Run on a Ray cluster (needs the ray extra: pip install rigbench\\[ray]): auto, local, or the head's "
        "HOST:PORT. A plan's rigs become tasks placed by their resources; with --endpoint, --clients N spreads "
        "the speed load (docs/scale-out.md).", "--ray")] = None
    clients: Annotated[int, Flag(
        "Client actors driving the speed suite's load, or one --rate/--sweep schedule split over them (with "
        "--ray and --endpoint).", min=1)] = 1
    csv: Annotated[Path | None, Flag(
        "Also write one CSV row per request (intended start, send, first token, end, tokens, TTFT, ITL, "
        "error).")] = None
    jsonl: Annotated[Path | None, Flag("Also write one JSON line per request (the --csv fields).")] = None


# Options that are not settings of the measured plan (`RunArgs` adds them to `RunOptions`).
CLI_ONLY_OPTIONS = frozenset(RunArgs.model_fields) - frozenset(RunOptions.model_fields)
