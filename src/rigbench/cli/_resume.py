"""`rigbench run --resume DIR`: the options come from the run's header, not from today's defaults.

A run records the options it was started with (`plan.cli_options` in run.json). Resuming takes
those; an option given again on the command line must have the recorded value, else resume is
refused naming the option and both values (adversary: a resume command that would measure another
rig, endpoint, model or setting and merge its numbers into this run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import typer
from pydantic import BaseModel

from rigbench.cli._console import make_console
from rigbench.cli._typed import options_from_params, params_of
from rigbench.client import redact_url
from rigbench.errors import UsageError
from rigbench.outside import for_console
from rigbench.store import RunReader

__all__ = ["NOT_SETTINGS", "recorded_options", "refuse_damaged", "resumed_options"]

# Options that say where output goes or how to exit, not what is measured: free to change on resume, and not
# recorded (runs recorded before csv and jsonl were listed here still resume: runner/_resume.py OUTPUT_OPTIONS).
NOT_SETTINGS = frozenset({"ctx", "plan", "resume", "out", "markdown", "allow_untrusted", "allow_busy_host", "label", "api_key_env",
                          "port", "retry_failed", "allow_long_run", "html", "json_out", "csv", "jsonl"})

M = TypeVar("M", bound=BaseModel)


def _jsonable(name: str, value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):  # a repeatable option not given is recorded as null, as ever
        return [_jsonable(name, v) for v in value] or None
    if name == "rate" and isinstance(value, str) and "," not in value:
        try:  # one rate is recorded as a number, as it was before --rate took a list
            return float(value)
        except ValueError:
            return value
    if name == "endpoint" and isinstance(value, str):
        return redact_url(value).rstrip("/")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def refuse_damaged(reader: RunReader) -> None:
    """A finished run whose data is missing or changed is not resumed: measuring the rest would give
    damaged data a fresh source-data id."""
    if reader.damage:
        raise UsageError(f"cannot resume {reader.dir}: it is damaged: {'; '.join(reader.damage)}. Its figures do not "
                         "stand; measure the rig again in a new run (`rigbench run` with the same options).")


def _say_if_complete(reader: RunReader, options: dict[str, Any]) -> None:
    if reader.header.status == "complete" and not options.get("retry_failed"):
        make_console().print(f"{for_console(reader.dir)}: this run is already complete; nothing to measure (source "
                             f"data {reader.source_data_id}, unchanged). Show it with `rigbench report "
                             f"{for_console(reader.dir)}`; `--retry-failed` redoes its failed requests.")
        raise typer.Exit(0)


def recorded_options(options: BaseModel) -> dict[str, Any]:
    """The settings part of `run`'s options, as stored in run.json (credentials removed)."""
    return {k: _jsonable(k, v) for k, v in params_of(options).items() if k not in NOT_SETTINGS}


def resumed_options(ctx: Any, options: M, resume: Path) -> M | None:
    """`options` with every setting taken from the run being resumed; None for a run that did not record
    them (an older rigbench, or a plan's rig: the runner then compares the resolved plan instead).

    Raises UsageError when the command line sets an option to another value than the run has, and
    typer.Exit(0) after saying so when the run is already complete.
    """
    given = params_of(options)
    reader = RunReader(resume)
    refuse_damaged(reader)
    recorded = (reader.header.plan or {}).get("cli_options")
    if not isinstance(recorded, dict):
        _say_if_complete(reader, given)
        return None
    for name, value in given.items():
        if name in NOT_SETTINGS or name not in recorded:
            continue
        source = ctx.get_parameter_source(name)
        if getattr(source, "name", None) not in ("COMMANDLINE", "ENVIRONMENT"):
            continue
        now = _jsonable(name, value)
        if now != recorded[name]:
            flag = "--" + name.rstrip("_").replace("_", "-")  # set_ is --set
            raise UsageError(
                f"cannot resume {resume}: it was started with {flag} {json.dumps(recorded[name])} and this command "
                f"gives {flag} {json.dumps(now)}. A resumed run measures the same rig with the same settings: "
                f"run `rigbench run --resume {resume}` without {flag} (its settings come from its run.json), "
                "or start a new run.")
    _say_if_complete(reader, given)  # after the comparison: a finished run refuses changed options too
    merged = {**given, **{k: v for k, v in recorded.items() if k in given and k not in NOT_SETTINGS}}
    return options_from_params(type(options), merged)
