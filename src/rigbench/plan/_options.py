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
from rigbench.inputs import explain, shown
from rigbench.records import Input
from rigbench.rig import Flag, RigFlags
from rigbench.suites import suite_help

__all__ = ["RunOptions"]


class RunOptions(Input):
    """`rigbench run`'s options that make the plan, by parameter name (None: not given, so the settings
    models' defaults apply)."""

    rig: RigFlags = Field(default_factory=RigFlags)  # first: --endpoint, --model, --engine lead the help
    api_key_env: Annotated[str | None, Flag(
        "Environment variable holding the API key (never printed or saved).",
        metavar="VAR", rich_help_panel="Rig")] = None
    suite: Annotated[str, Flag(
        f"Suites to run, comma-separated: {suite_help()}.",
        metavar="LIST", rich_help_panel="Suites")] = "speed"
    profile: Annotated[str, Flag(
        "Speed shapes: quick (small, for CPU rigs) or full (the production-size shapes of the "
        "hand-run benchmark rigbench automates). Listed under --scenarios.",
        metavar="NAME", rich_help_panel="Workload (speed suite)")] = "quick"
    scenarios: Annotated[str | None, Flag(
        "Speed scenarios, comma-separated (default: all four). Input/output tokens, quick | full:\n\n"
        "chat_short          128/64 | 128/256\n\n"
        "chat_long_context   512/64 | 8192/256\n\n"
        "code_generation    256/128 | 512/1024\n\n"
        "summarization      1024/32 | 16384/128",
        metavar="LIST", rich_help_panel="Workload (speed suite)")] = None
    repetitions: Annotated[int, Flag(
        "Measured repetitions per scenario and level.",
        min=1, metavar="N", rich_help_panel="Workload (speed suite)")] = 5
    warmup: Annotated[int, Flag(
        "Warm-up repetitions before them (not measured).",
        min=0, metavar="N", rich_help_panel="Workload (speed suite)")] = 1
    max_requests: Annotated[int | None, Flag(
        "Refuse, before anything starts, a speed plan of more requests (default 1,000,000: a typo "
        "guard).",
        metavar="N", rich_help_panel="Workload (speed suite)")] = None
    concurrency: Annotated[str, Flag(
        "Concurrency levels, comma-separated, e.g. 1,2,4,8.",
        metavar="LIST", rich_help_panel="Workload (speed suite)")] = "1"
    seed: Annotated[int, Flag(
        "Seed for prompts and sampling.",
        metavar="N", rich_help_panel="Workload (speed suite)")] = 0
    allow_busy_host: Annotated[bool, Flag(
        "Keep speed figures measured while other processes used the engine's cores: the run stays "
        "trusted and the busy-host finding is shown.",
        "--allow-busy-host", metavar="", rich_help_panel="Output and verdict")] = False
    allow_long_run: Annotated[bool, Flag(
        "Run past a day: a load schedule known to take longer is refused up front, and a speed run "
        "projected longer (from its first measured batch) stops there, unless given.",
        "--allow-long-run", metavar="", rich_help_panel="Timeouts and retries")] = False
    allow_unconfined: Annotated[bool, Flag(
        "Run model-written code (code packs, agent tasks) even where bubblewrap cannot confine it; "
        "results are marked 'unconfined'.",
        "--allow-unconfined", metavar="", rich_help_panel="Suites")] = False
    no_sanity: Annotated[bool, Flag(
        "Skip the known-answer gate (the run is then untrusted).",
        "--no-sanity", metavar="", rich_help_panel="Suites")] = False
    sanity_max_tokens: Annotated[int, Flag(
        "Token budget per known-answer question (room for models that think first).",
        min=8, metavar="N", rich_help_panel="Suites")] = 1024
    sanity_seed: Annotated[int | None, Flag(
        "Seed of the gate's questions (default: fresh per run, recorded).",
        metavar="N", rich_help_panel="Suites")] = None
    mmlu_data: Annotated[str | None, Flag(
        "MMLU-Pro data: a directory of parquet/JSONL files (default: download TIGER-Lab/MMLU-Pro).",
        metavar="DIR", rich_help_panel="Suites")] = None
    mmlu_questions: Annotated[int | None, Flag(
        "MMLU-Pro questions per subject (default 200).",
        min=1, metavar="N", rich_help_panel="Suites")] = None
    mmlu_subjects: Annotated[str | None, Flag(
        "MMLU-Pro subjects, comma-separated (default: all 14).",
        metavar="LIST", rich_help_panel="Suites")] = None
    pack: Annotated[list[str], Flag(
        "Task packs for --suite packs/effort, comma-separated: shipped names (multilingual) or YAML "
        "paths.",
        "--pack", metavar="LIST", rich_help_panel="Suites")] = Field(default_factory=list)
    effort_levels: Annotated[str | None, Flag(
        "Reasoning efforts for --suite effort, comma-separated, e.g. none,low,medium,high,xhigh.",
        metavar="LIST", rich_help_panel="Suites")] = None
    bandwidth_gbs: Annotated[float | None, Flag(
        "Memory bandwidth for the decode roofline when the device is not in rigbench's table "
        "(measure it: `rigbench probe`).",
        metavar="GB/S", rich_help_panel="Rig")] = None
    idle_timeout: Annotated[float | None, Flag(
        "Fail a request (`idle_timeout`) after this many seconds without a generated token; "
        "keep-alive comments do not count (default 600).",
        metavar="S", rich_help_panel="Timeouts and retries")] = None
    request_timeout: Annotated[float | None, Flag(
        "Fail a request (`total_timeout`) that runs longer than this many seconds (default 3600).",
        metavar="S", rich_help_panel="Timeouts and retries")] = None
    retry_on: Annotated[str | None, Flag(
        "Send a request again when the server answers one of these HTTP statuses, comma-separated, "
        "e.g. 429,503, after its Retry-After (else 1, 2, 4... s); waits are recorded, never timed as "
        "latency (default: no retries).",
        metavar="LIST", rich_help_panel="Timeouts and retries")] = None
    max_retries: Annotated[int | None, Flag(
        "With --retry-on: retries per request at most (default 3).",
        metavar="N", rich_help_panel="Timeouts and retries")] = None
    max_retry_wait: Annotated[float | None, Flag(
        "With --retry-on: seconds one request may wait for retries in all; a longer Retry-After ends "
        "its retries at once (default 60).",
        metavar="S", rich_help_panel="Timeouts and retries")] = None
    tool_trials: Annotated[int | None, Flag(
        "Agent: trials of each tool-call case (default 3).",
        metavar="N", rich_help_panel="Suites")] = None
    bfcl_per_category: Annotated[int | None, Flag(
        "Agent: BFCL items per category (default 10; 0 skips BFCL).",
        metavar="N", rich_help_panel="Suites")] = None
    bfcl_trials: Annotated[int | None, Flag(
        "Agent: trials of each BFCL item (default 1).",
        metavar="N", rich_help_panel="Suites")] = None
    bfcl_data: Annotated[str | None, Flag(
        "Agent: the BFCL data files (default: the pinned release, downloaded once).",
        metavar="DIR", rich_help_panel="Suites")] = None
    agent_tasks: Annotated[str | None, Flag(
        "Agent: multi-turn tasks, comma-separated shipped names or task directories (default: all "
        "shipped).",
        metavar="LIST", rich_help_panel="Suites")] = None
    task_trials: Annotated[int | None, Flag(
        "Agent: trials of each multi-turn task, the k of pass@k (default 3).",
        metavar="N", rich_help_panel="Suites")] = None
    max_turns: Annotated[int | None, Flag(
        "Agent: model turns per task trial at most (default 20).",
        metavar="N", rich_help_panel="Suites")] = None
    task_max_tokens: Annotated[int | None, Flag(
        "Agent: token budget per model turn of a task (default 1024).",
        metavar="N", rich_help_panel="Suites")] = None
    set_: Annotated[list[str], Flag(
        "Any plan-file suite setting, SECTION.KEY=VALUE (YAML value), repeatable: e.g. --set "
        "mmlu_pro.shots=3 (keys: docs/plans.md).",
        "--set", metavar="KEY=VAL", rich_help_panel="Suites")] = Field(default_factory=list)
    # the load suite (rate mode): suites/load/_flags.py maps them to its settings
    rate: Annotated[str | None, Flag(
        "Offer this many requests per second, open loop (the load suite replaces speed; "
        "docs/metrics.md); several, comma-separated (5,10,20), one window each.",
        metavar="RPS", rich_help_panel="Rate mode (load suite)")] = None
    arrival: Annotated[str | None, Flag(
        "Arrivals of --rate: constant, poisson (default) or gamma.",
        metavar="NAME", rich_help_panel="Rate mode (load suite)")] = None
    burstiness: Annotated[float | None, Flag(
        "Gamma shape of --arrival gamma (1 is Poisson, below 1 burstier).",
        metavar="X", rich_help_panel="Rate mode (load suite)")] = None
    duration: Annotated[float | None, Flag(
        "Offer each rate for this many seconds (default 30: a 5-point sweep takes about 3 minutes; "
        "each window's ramp and drain are left out of its figures).",
        metavar="S", rich_help_panel="Rate mode (load suite)")] = None
    requests: Annotated[int | None, Flag(
        "Send this many requests per rate instead of --duration (a sweep's saturation burst: default 64).",
        metavar="N", rich_help_panel="Rate mode (load suite)")] = None
    max_concurrency: Annotated[int | None, Flag(
        "Requests in flight at most; later ones wait, and the wait counts in their response time.",
        metavar="N", rich_help_panel="Rate mode (load suite)")] = None
    sweep: Annotated[bool, Flag(
        "Find the saturation throughput, then measure --sweep-points rates below it, --duration each.",
        "--sweep", metavar="", rich_help_panel="Rate mode (load suite)")] = False
    sweep_points: Annotated[int | None, Flag(
        "Rates a sweep measures (default 5).",
        metavar="N", rich_help_panel="Rate mode (load suite)")] = None
    slo: Annotated[str | None, Flag(
        "Latency targets of goodput, comma-separated, e.g. ttft=500ms,itl=50ms,e2e=10s (TTFT and "
        "e2e from the intended start).",
        metavar="LIST", rich_help_panel="Rate mode (load suite)")] = None
    slo_attainment: Annotated[float | None, Flag(
        "The knee: the highest rate where this fraction met every target (default 0.99).",
        metavar="X", rich_help_panel="Rate mode (load suite)")] = None
    input_tokens: Annotated[str | None, Flag(
        "Input tokens per request: a count, or uniform:LO,HI, normal:MEAN,SD, lognormal:MEAN,SD "
        "(default 128).",
        metavar="DIST", rich_help_panel="Rate mode (load suite)")] = None
    output_tokens: Annotated[str | None, Flag(
        "Output tokens per request, as --input-tokens (default 64).",
        metavar="DIST", rich_help_panel="Rate mode (load suite)")] = None
    trace: Annotated[str | None, Flag(
        "Replay this trace's arrivals and lengths (JSONL or CSV: Azure, Mooncake or rigbench "
        "columns).",
        metavar="FILE", rich_help_panel="Rate mode (load suite)")] = None
    sessions: Annotated[int | None, Flag(
        "Multi-turn sessions started at --rate; each turn sends the history and a new message.",
        metavar="N", rich_help_panel="Rate mode (load suite)")] = None
    turns: Annotated[int | None, Flag(
        "Turns per session (default 2).",
        metavar="N", rich_help_panel="Rate mode (load suite)")] = None

    @field_validator("rate", mode="before")
    @classmethod
    def _rate(cls, v: Any) -> Any:
        return repr(float(v)) if isinstance(v, int | float) and not isinstance(v, bool) else v  # a run recorded 5.0

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

    @field_validator("pack")
    @classmethod
    def _comma_list(cls, v: list[str]) -> list[str]:
        """--pack a,b as --pack a --pack b (lists are comma-separated in every option)."""
        return [p.strip() for item in v for p in item.split(",") if p.strip()]

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
            raise UsageError(f"{flag}: {explain(err)}; got {shown(err['input'])}.") from None
