"""`rigbench run`'s settings options, typed: what `plan_from_options` turns into a one-rig plan.

The CLI's parameters by name (None: not given, so the settings models' defaults apply); the rig's
own flags are `rigbench.rig.RigFlags`. `tests/unit/test_run_options.py` keeps these fields and the
`rigbench run` parameters in step, so an option cannot be added to one and forgotten in the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from rigbench.errors import UsageError
from rigbench.records import Frozen
from rigbench.rig import RigFlags

__all__ = ["CLI_ONLY_OPTIONS", "RunOptions"]

# `rigbench run` parameters that are not settings of the measured plan: where output goes, how to exit,
# what to resume or redo, how to spread the run.
CLI_ONLY_OPTIONS = frozenset({"ctx", "plan", "resume", "retry_failed", "out", "markdown", "label",
                              "allow_untrusted", "ray", "clients", "csv", "jsonl"})


class RunOptions(Frozen):
    """`rigbench run`'s options that make the plan, by parameter name."""

    suite: str | None = None
    profile: str | None = None
    scenarios: str | None = None
    repetitions: int | None = None
    warmup: int | None = None
    max_requests: int | None = None
    concurrency: str | list[int] | None = None
    mmlu_data: str | None = None
    mmlu_questions: int | None = None
    mmlu_subjects: str | None = None
    pack: list[str] = Field(default_factory=list)
    effort_levels: str | None = None
    tool_trials: int | None = None
    bfcl_per_category: int | None = None
    bfcl_trials: int | None = None
    bfcl_data: str | None = None
    agent_tasks: str | None = None
    task_trials: int | None = None
    max_turns: int | None = None
    task_max_tokens: int | None = None
    seed: int = 0
    no_sanity: bool = False
    allow_unconfined: bool = False
    allow_busy_host: bool = False
    sanity_max_tokens: int | None = None
    sanity_seed: int | None = None
    bandwidth_gbs: float | None = None
    idle_timeout: float | None = None
    request_timeout: float | None = None
    api_key_env: str | None = None
    set_: list[str] = Field(default_factory=list)
    # the load suite (rate mode): suites/load/_flags.py maps them to its settings
    rate: float | None = None
    arrival: str | None = None
    burstiness: float | None = None
    duration: float | None = None
    requests: int | None = None
    max_concurrency: int | None = None
    sweep: bool = False
    sweep_points: int | None = None
    slo: str | None = None
    slo_attainment: float | None = None
    input_tokens: str | None = None
    output_tokens: str | None = None
    trace: str | None = None
    sessions: int | None = None
    turns: int | None = None
    rig: RigFlags = Field(default_factory=RigFlags)

    @field_validator("bfcl_data", "trace", mode="before")
    @classmethod
    def _path(cls, v: Any) -> Any:
        return str(v) if isinstance(v, Path) else v

    @field_validator("pack", "set_", mode="before")
    @classmethod
    def _none(cls, v: Any) -> Any:
        return list(v or [])

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> RunOptions:
        """From `rigbench run`'s parameters by name (as given, or as a run recorded them). Output and exit
        options (`CLI_ONLY_OPTIONS`) are not settings; the test named above fails on any other
        parameter that no field takes."""
        known = set(cls.model_fields) - {"rig"}
        given = {k: v for k, v in options.items() if k in known and v is not None}
        try:
            return cls.model_validate({**given, "rig": RigFlags.of(options)})
        except ValidationError as e:  # typer has typed them already; a hand-edited run.json may not have
            err = e.errors()[0]
            flag = "--" + str(err["loc"][0]).rstrip("_").replace("_", "-")
            raise UsageError(f"{flag}: {err['msg']}; got {err['input']!r}.") from None
