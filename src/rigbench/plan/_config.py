"""The one path from settings to a `RunConfig`: a plan's rig, or `rigbench run`'s flags as a one-rig plan.

`plan_from_options` turns the flags into a `Plan` (validated by the same models as a plan file,
errors naming the flag); `run_config_for` builds the `RunConfig` of one rig of any plan. Context
and slot sizing of a launched rig come from `rigbench.sizing`, here and nowhere else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from rigbench.errors import UsageError
from rigbench.inputs import explain, load_yaml, shown
from rigbench.plan._keys import known_keys
from rigbench.plan._length import check_plan_length
from rigbench.plan._load import ResolvedRig, expand_rigs
from rigbench.plan._models import Plan
from rigbench.plan._options import RunOptions
from rigbench.rig import check_rig, check_rig_flags, rig_from_flags, size_flag_rig, size_rig
from rigbench.runner import BusyHostPolicy, RunConfig
from rigbench.sandbox import require_confinement
from rigbench.suites import SUITES
from rigbench.suites.load import load_suites

__all__ = ["CliPlan", "plan_from_options", "run_config_for"]


def _shapes(plan: Plan, suites: list[str]) -> list[tuple[int, int]]:
    """Token shapes a launched rig must serve: the speed scenarios, when the rig measures speed."""
    return [(s.input_tokens, s.output_tokens) for s in plan.speed.shapes] if "speed" in suites else []


def run_config_for(plan: Plan, rig: ResolvedRig, out_dir: Path, *, run_id: str | None = None,
                   resume: Path | None = None, label: str | None = None, allow_untrusted: bool = True,
                   cli_options: dict[str, Any] | None = None, measure_untrusted: bool = False) -> RunConfig:
    """The `RunConfig` that measures `rig` of `plan` (for `rigbench run` flags: `plan_from_options`).

    Plans keep going past an untrusted rig (`allow_untrusted`) and report it in their index; at a busy
    window their rigs stop, unless the plan allows a busy host. `measure_untrusted`: a single run asked for
    whatever its verdict (`--allow-untrusted`) measures on at a busy window (`BusyHostPolicy.decide`).
    """
    settings = plan.suite_settings()
    api_key = None
    if rig.api_key_env:
        api_key = os.environ.get(rig.api_key_env)
        if not api_key:
            raise UsageError(f"rig {rig.name!r}: api_key_env {rig.api_key_env} is not set or empty.")
    spec = size_rig(rig.spec, _shapes(plan, rig.suites), plan.speed.concurrency)
    check_rig(spec)
    run = RunConfig(
        rig=spec, suite_names=list(rig.suites), settings=settings, out_dir=out_dir, sanity=plan.sanity,
        sanity_max_tokens=plan.sanity_max_tokens, sanity_seed=plan.sanity_seed,
        bandwidth_gb_s=plan.bandwidth_gb_s, seed=plan.seed, label=label or rig.name, resume=resume,
        run_id=run_id, api_key=api_key, allow_untrusted=allow_untrusted, deadlines=plan.deadlines,
        retries=plan.retries, allow_long_run=plan.allow_long_run, cli_options=cli_options,
        busy_host=BusyHostPolicy.decide(allow_busy_host=plan.allow_busy_host, measure_untrusted=measure_untrusted))
    if "tasks" in run.suite_settings.get("agent", {}).get("parts", []):
        require_confinement(settings.agent.allow_unconfined)  # before the engine starts
    return run


class CliPlan(NamedTuple):
    """`rigbench run`'s flags as a plan of one rig."""

    plan: Plan
    rig: ResolvedRig


def _names(value: str | None) -> list[str] | None:
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


def _given(**values: Any) -> dict[str, Any]:
    """Only the options given: the rest keep the settings models' defaults (one place for them)."""
    return {k: v for k, v in values.items() if v is not None}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


# Plan keys whose flag is not the key's own name: each suite's settings from its spec's flags, then the rest.
_FLAG_OF: dict[tuple[str | int, ...], str] = {
    **{(spec.key, f.setting): f.flag for spec in SUITES for f in spec.flags},
    ("speed",): "--scenarios", ("suites",): "--suite", ("load",): "load",
    ("bandwidth_gb_s",): "--bandwidth-gbs", ("deadlines", "idle_s"): "--idle-timeout",
    ("deadlines", "total_s"): "--request-timeout", ("rigs", 0, "embedded", "model"): "--model-file",
    ("retries", "statuses"): "--retry-on", ("retries", "max_retries"): "--max-retries",
    ("retries", "max_wait_s"): "--max-retry-wait",
    ("rigs", 0, "embedded", "extra_args"): "--engine-arg", ("rigs", 0, "endpoint", "base_url"): "--endpoint",
}


def _cli_error(e: ValidationError, sets: dict[str, Any]) -> UsageError:
    """A validation error of the flags' plan, naming the flag (or `--set KEY`) as the user typed it."""
    lines = []
    for err in e.errors():
        loc = tuple(err["loc"])
        key = ".".join(str(x) for x in loc)
        # the flag of the deepest key the loc passes through (a section alone only when the loc is just it)
        named = next((loc[:n] for n in range(len(loc), min(2, len(loc)) - 1, -1) if loc[:n] in _FLAG_OF), None)
        if key in sets:
            flag = f"--set {key}"
        elif named is not None:
            flag = _FLAG_OF[named]
        elif len(loc) > 1 and loc[0] in _SET_SECTIONS:  # a suite's setting (`load.input_tokens.mean`): its flag
            flag = _flag(str(loc[1]))
        else:
            flag = _flag(str(loc[-1])) if loc else "--set"
        msg = explain(err)
        if err["type"] == "extra_forbidden":
            keys = known_keys(loc)
            msg = (f"no such setting; the keys of {loc[0]} are {', '.join(keys)}" if keys and len(loc) > 1
                   else "no such setting") + " (`rigbench run --help`, docs/plans.md)"
        got = "" if "got" in msg or err["type"] == "extra_forbidden" else f"; got {shown(err['input'])}"
        lines.append(f"{flag}: {msg}{got}.".replace("..", "."))
    return UsageError(" ".join(lines))


def _parse_sets(items: list[str]) -> dict[str, Any]:
    """`--set SECTION.KEY=VALUE`: the value read as YAML, as it would be in a plan file."""
    out: dict[str, Any] = {}
    for item in items:
        key, eq, text = item.partition("=")
        if not eq or "." not in key or not key.split(".", 1)[1]:
            raise UsageError(f"--set {item!r}: give SECTION.KEY=VALUE, e.g. --set agent.repeat_limit=5 or "
                             "--set mmlu_pro.shots=3 (the keys are a plan file's: docs/plans.md).")
        out[key.strip()] = load_yaml(text, f"--set {key.strip()}: the value")[1]
    return out


def _nested(sets: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, value in sets.items():
        section, _, name = key.partition(".")
        out.setdefault(section, {})[name] = value
    return out


# Sections `--set` may change: the suites' settings (the rig and run-level options have their own flags).
_SET_SECTIONS = tuple(spec.key for spec in SUITES)


def plan_from_options(options: RunOptions | Mapping[str, Any]) -> CliPlan:
    """`rigbench run`'s options (typed, or its parameters by name) as a one-rig plan.

    Range checks the models make (repetitions >= 1, a known scenario, ...) are the plan file's,
    reported with the flag's name.
    """
    o = options if isinstance(options, RunOptions) else RunOptions.of(options)
    sets = _parse_sets(o.set_)
    for key in sets:
        if key.split(".", 1)[0] not in _SET_SECTIONS:
            raise UsageError(f"--set {key}: only suite settings are set this way ({', '.join(_SET_SECTIONS)}); "
                             "the rig and the run have their own flags (`rigbench run --help`).")
    sections = {spec.key: spec.options(o) for spec in SUITES}  # each suite's settings its flags give
    for section, values in _nested(sets).items():
        sections[section].update(values)
    data: dict[str, Any] = {
        "name": "run", "suites": load_suites(_names(o.suite) or [], sections["load"]), **sections, "seed": o.seed,
        "sanity": not o.no_sanity,
        "allow_unconfined": o.allow_unconfined, "allow_busy_host": o.allow_busy_host,
        "allow_long_run": o.allow_long_run,
        **_given(sanity_max_tokens=o.sanity_max_tokens, sanity_seed=o.sanity_seed, bandwidth_gb_s=o.bandwidth_gbs),
        "deadlines": _given(idle_s=o.idle_timeout, total_s=o.request_timeout),
        "retries": _given(statuses=o.retry_on, max_retries=o.max_retries, max_wait_s=o.max_retry_wait),
        "rigs": [{"name": "run", **_rig(o)}],
    }
    try:
        plan = Plan.model_validate(data)
    except ValidationError as e:
        raise _cli_error(e, sets) from None
    check_plan_length(plan, [plan.suites], fix="pass --allow-long-run")
    rig = expand_rigs(plan)[0]
    rig = rig._replace(spec=size_flag_rig(rig.spec, _shapes(plan, rig.suites), plan.speed.concurrency))
    return CliPlan(plan, rig)


def _rig(o: RunOptions) -> dict[str, Any]:
    """The rig part of the flags: the plan rig section they make, and the API key's variable."""
    check_rig_flags(o.rig)
    api_key_env = o.api_key_env
    if api_key_env and not os.environ.get(api_key_env):
        raise UsageError(f"--api-key-env {api_key_env}: that environment variable is not set or empty.")
    return {"api_key_env": api_key_env or None, **rig_from_flags(o.rig)}
