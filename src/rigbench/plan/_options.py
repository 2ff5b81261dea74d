"""`rigbench run`'s settings options, typed and declared once: what `plan_from_options` turns into a
one-rig plan, and what the command line is made of.

Each field is one option: its type, its default and its help (`rig.Flag`); the rig's own flags are
`rigbench.rig.RigFlags` (the `rig` field, flat on the command line). `rigbench run` is generated from
these fields and the output options of `cli._run_options.RunArgs`, so adding an option is adding a
field here (and reading it where it takes effect, in `plan_from_options`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationError, field_validator

from rigbench.errors import UsageError
from rigbench.records import Frozen
from rigbench.rig import Flag, RigFlags

__all__ = ["RunOptions"]


class RunOptions(Frozen):
    """`rigbench run`'s options that make the plan, by parameter name (None: not given, so the settings
    models' defaults apply)."""

    rig: RigFlags = Field(default_factory=RigFlags)  # first: --endpoint, --model, --engine lead the help
    api_key_env: Annotated[str | None, Flag(
        "Name of the environment variable holding the API key (the key never appears in output or files).")] = None
    suite: Annotated[str, Flag(
        "Comma-separated suites to run (speed, quality, mmlu_pro, packs, effort, agent, ...).")] = "speed"
    profile: Annotated[str, Flag(
        "Speed profile: quick (shrunk shapes, for small CPU rigs) or full (the seed's shapes: 128/256, 8192/256, "
        "512/1024, 16384/128).")] = "quick"
    scenarios: Annotated[str | None, Flag("Comma-separated speed scenarios (default: all four).")] = None
    repetitions: Annotated[int, Flag("Measured repetitions per scenario.", min=1)] = 5
    warmup: Annotated[int, Flag("Warm-up repetitions (not counted).", min=0)] = 1
    max_requests: Annotated[int | None, Flag(
        "Refuse, before anything starts, a speed plan of more requests than this (default 1,000,000: a typo "
        "guard).")] = None
    concurrency: Annotated[str, Flag("Concurrency levels, e.g. 1,2,4,8.")] = "1"
    seed: Annotated[int, Flag("Seed for prompts and sampling.")] = 0
    allow_busy_host: Annotated[bool, Flag(
        "Keep speed figures measured while other processes (or the hypervisor) used the engine's cores: the run "
        "stays trusted and the busy-host finding is shown.")] = False
    allow_long_run: Annotated[bool, Flag(
        "Run past a day: a load schedule known to take longer is refused up front, and a speed run projected "
        "longer (from its first measured batch) stops there, unless given.")] = False
    allow_unconfined: Annotated[bool, Flag(
        "Run model-written code (code packs, agent tasks) even where bubblewrap cannot confine it; results are "
        "marked 'unconfined'.")] = False
    no_sanity: Annotated[bool, Flag(
        "Skip the known-answer gate (the run is then marked untrusted).", "--no-sanity")] = False
    sanity_max_tokens: Annotated[int, Flag(
        "Token budget per known-answer question (room for models that think first).", min=8)] = 1024
    sanity_seed: Annotated[int | None, Flag(
        "Seed of the gate's generated questions (default: a fresh one per run, recorded in the run).")] = None
    mmlu_data: Annotated[str | None, Flag(
        "MMLU-Pro data: a local directory of parquet/JSONL files (default: download TIGER-Lab/MMLU-Pro from "
        "the hub).")] = None
    mmlu_questions: Annotated[int | None, Flag(
        "MMLU-Pro questions per subject (default 200, as the seed).", min=1)] = None
    mmlu_subjects: Annotated[str | None, Flag("Comma-separated MMLU-Pro subjects (default: all 14).")] = None
    pack: Annotated[list[str], Flag(
        "Task pack for --suite packs/effort: a shipped name (multilingual) or a YAML path; repeatable.",
        "--pack")] = Field(default_factory=list)
    effort_levels: Annotated[str | None, Flag(
        "Reasoning-effort levels for --suite effort, e.g. none,low,medium,high,xhigh.")] = None
    bandwidth_gbs: Annotated[float | None, Flag(
        "Memory bandwidth (GB/s) for the decode roofline when the device is not in rigbench's table (measure "
        "it with `rigbench probe`).", min=0.001)] = None
    idle_timeout: Annotated[float | None, Flag(
        "Fail a request (typed record `idle_timeout`) after this many seconds without a generated token; "
        "keep-alive comments do not count (default 600).")] = None
    request_timeout: Annotated[float | None, Flag(
        "Fail a request (typed record `total_timeout`) that runs longer than this many seconds "
        "(default 3600).")] = None
    retry_on: Annotated[str | None, Flag(
        "Send a request again when the server answers one of these HTTP statuses, e.g. 429,503, after its "
        "Retry-After (else 1, 2, 4... s); waits are recorded, never timed as latency (default: no "
        "retries).")] = None
    max_retries: Annotated[int | None, Flag("With --retry-on: retries per request at most (default 3).")] = None
    max_retry_wait: Annotated[float | None, Flag(
        "With --retry-on: seconds one request may wait for retries in all; a longer Retry-After ends its "
        "retries at once (default 60).")] = None
    tool_trials: Annotated[int | None, Flag(
        "Agent suite: trials of each tool-call case (default 3; plan key agent.tool_trials).")] = None
    bfcl_per_category: Annotated[int | None, Flag(
        "Agent suite: BFCL items per category (default 10; 0 skips BFCL; plan key "
        "agent.bfcl_per_category).")] = None
    bfcl_trials: Annotated[int | None, Flag("Agent suite: trials of each BFCL item (default 1).")] = None
    bfcl_data: Annotated[str | None, Flag(
        "Agent suite: a directory holding the BFCL data files (default: the pinned release, downloaded "
        "once).")] = None
    agent_tasks: Annotated[str | None, Flag(
        "Agent suite: comma-separated multi-turn tasks, shipped names or task directories (default: every "
        "shipped task).")] = None
    task_trials: Annotated[int | None, Flag(
        "Agent suite: trials of each multi-turn task, the k of pass@k (default 3).")] = None
    max_turns: Annotated[int | None, Flag(
        "Agent suite: a task trial stops after this many model turns (default 20).")] = None
    task_max_tokens: Annotated[int | None, Flag(
        "Agent suite: token budget per model turn of a task (default 1024).")] = None
    set_: Annotated[list[str], Flag(
        "Any suite setting a plan file takes, as SECTION.KEY=VALUE (VALUE read as YAML), repeatable: e.g. "
        "--set agent.repeat_limit=5 --set mmlu_pro.shots=3 --set speed.temperature=0.7 (keys: docs/plans.md).",
        "--set")] = Field(default_factory=list)
    # the load suite (rate mode): suites/load/_flags.py maps them to its settings
    rate: Annotated[float | None, Flag(
        "Offer load at this many requests per second, open loop (the load suite replaces speed; "
        "docs/metrics.md, rate mode).")] = None
    arrival: Annotated[str | None, Flag("Arrival process of --rate: constant, poisson (default) or gamma.")] = None
    burstiness: Annotated[float | None, Flag(
        "Gamma shape of --arrival gamma (1 is Poisson, below 1 burstier).")] = None
    duration: Annotated[float | None, Flag("Offer each rate for this many seconds (else --requests).")] = None
    requests: Annotated[int | None, Flag(
        "Requests per rate (default 32; the sweep's saturation burst: default 64).")] = None
    max_concurrency: Annotated[int | None, Flag(
        "At most this many requests in flight; later ones wait, and the wait counts in their response "
        "time.")] = None
    sweep: Annotated[bool, Flag(
        "Find the saturation throughput, then measure --sweep-points rates below it (goodput and knee with "
        "--slo).", "--sweep")] = False
    sweep_points: Annotated[int | None, Flag("Rates a sweep measures (default 5).")] = None
    slo: Annotated[str | None, Flag(
        "Latency targets for goodput, e.g. ttft=500ms,itl=50ms,e2e=10s (TTFT and e2e from the intended "
        "start).")] = None
    slo_attainment: Annotated[float | None, Flag(
        "The knee: highest rate where at least this fraction met every target (default 0.99).")] = None
    input_tokens: Annotated[str | None, Flag(
        "Load suite: rendered input tokens per request, a count or uniform:LO,HI, normal:MEAN,SD, "
        "lognormal:MEAN,SD (default 128).")] = None
    output_tokens: Annotated[str | None, Flag(
        "Load suite: output tokens per request, as --input-tokens (default 64).")] = None
    trace: Annotated[str | None, Flag(
        "Load suite: replay this trace's arrivals and lengths (JSONL or CSV; Azure, Mooncake or rigbench "
        "columns; docs/metrics.md).")] = None
    sessions: Annotated[int | None, Flag(
        "Load suite: multi-turn sessions started at --rate; each turn sends the history plus a new user "
        "message.")] = None
    turns: Annotated[int | None, Flag("Turns per session (default 2).")] = None

    @field_validator("bfcl_data", "trace", mode="before")
    @classmethod
    def _path(cls, v: Any) -> Any:
        return str(v) if isinstance(v, Path) else v

    @field_validator("concurrency", mode="before")
    @classmethod
    def _levels(cls, v: Any) -> Any:
        return ",".join(map(str, v)) if isinstance(v, list | tuple) else v  # levels as a list: 1,8 as typed

    @field_validator("pack", "set_", mode="before")
    @classmethod
    def _none(cls, v: Any) -> Any:
        return list(v or [])

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> RunOptions:
        """From `rigbench run`'s options by name, flat (as a run recorded them, or a test gives them):
        a name that is no option is ignored, None is not given."""
        known = set(cls.model_fields) - {"rig"}
        given = {k: v for k, v in options.items() if k in known and v is not None}
        try:
            return cls.model_validate({**given, "rig": RigFlags.of(options)})
        except ValidationError as e:  # a hand-edited run.json, say
            err = e.errors()[0]
            flag = "--" + str(err["loc"][0]).rstrip("_").replace("_", "-")
            raise UsageError(f"{flag}: {err['msg']}; got {err['input']!r}.") from None
