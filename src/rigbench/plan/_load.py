"""Loading a plan file: YAML -> validated `Plan` -> expanded rigs, errors pointing at file:line.

Pydantic reports where a value failed as a path of keys (`rigs.1.launch.model`); the YAML node
tree keeps each key's line, so the path is walked through it to name the line. A segment past
what the file holds is kept when it names a missing key, and dropped when it names a union member
(`list[int]`, `function-after[...]`), which is no key of the file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import BaseModel, ValidationError

from rigbench.client import Deadlines, redact_text
from rigbench.errors import UsageError
from rigbench.inputs import explain, load_yaml, read_text, shown
from rigbench.plan._keys import known_keys
from rigbench.plan._models import Plan, PlanRig
from rigbench.rig import EmbeddedRig, EndpointSpec, RigSpec
from rigbench.suites.speed import SpeedSettings

__all__ = ["LoadedPlan", "PlanError", "ResolvedRig", "expand_rigs", "load_plan"]


# A plan lists rigs and settings: kilobytes. A file far larger is not a plan (and is never read whole).
_PLAN_MAX_BYTES = 4 << 20


class PlanError(UsageError):
    """A plan file that cannot be used; the message names the file, line and key."""


class ResolvedRig(NamedTuple):
    name: str
    spec: RigSpec  # EmbeddedRig, a launch spec, or EndpointSpec
    suites: list[str]
    api_key_env: str | None

    def key(self) -> dict[str, Any]:
        """What identifies this rig's configuration (a resumed plan must match it)."""
        return {"name": self.name, "kind": self.spec.kind, "spec": _without_new_defaults(self.spec),
                "suites": self.suites}


class LoadedPlan(NamedTuple):
    path: Path
    text: str
    plan: Plan
    rigs: list[ResolvedRig]

    @property
    def config_sha256(self) -> str:
        """Hash of the resolved configuration (not of the file's text: comments may change)."""
        # allow_long_run lifts a bound, it measures nothing: a plan stopped at a day resumes with it added;
        # allow_busy_host likewise keeps figures (and measures on): a plan stopped on a busy host resumes with it
        return self._sha256({"allow_long_run", "allow_busy_host"})

    def resumes(self, recorded_sha256: str) -> bool:
        """Does a plan directory whose index records `recorded_sha256` resume with this plan? Directories
        written before allow_busy_host left the hash hashed it when true."""
        return recorded_sha256 in (self.config_sha256, self._sha256({"allow_long_run"}))

    def _sha256(self, verdict_keys: set[str]) -> str:
        # a setting left out is left out of the hash, so plans written before it existed still resume
        plan = _without_new_defaults(self.plan, exclude={"rigs", "description", "deadlines", *verdict_keys})
        if self.plan.deadlines.model_fields_set:
            plan["deadlines"] = _deadlines_key(self.plan.deadlines)
        body = {"plan": plan, "rigs": [r.key() for r in self.rigs]}

        # credentials in a URL are never used nor stored: the copy in the plan directory must hash the same
        return hashlib.sha256(redact_text(json.dumps(body, sort_keys=True)).encode()).hexdigest()[:16]


# Settings added after plan index format 1, per model: left at their default they stay out of the
# hash, so a plan directory started before they existed still resumes.
_ADDED_LATER: dict[type[BaseModel], frozenset[str]] = {
    Plan: frozenset({"mmlu_pro", "packs", "effort", "agent", "sanity_max_tokens", "sanity_seed", "bandwidth_gb_s",
                     "allow_busy_host", "load", "retries"}),
    SpeedSettings: frozenset({"temperature", "max_requests"}),
    EmbeddedRig: frozenset({"port", "kind"}),  # kind: always "embedded", added with RunConfig.rig
}


def _without_new_defaults(model: BaseModel, exclude: set[str] | None = None) -> dict[str, Any]:
    out = model.model_dump(mode="json", exclude=exclude)
    for name in _ADDED_LATER.get(type(model), frozenset()):
        field = type(model).model_fields[name]
        if getattr(model, name) == field.get_default(call_default_factory=True):
            out.pop(name, None)
    for name, value in vars(model).items():
        if isinstance(value, BaseModel) and name in out and type(value) in _ADDED_LATER:
            out[name] = _without_new_defaults(value)
    return out


def _deadlines_key(d: Deadlines) -> dict[str, Any]:
    """The plan's `deadlines:` as plans before `Deadlines` held its own defaults hashed it: the keys the
    file gives, idle and total as null when it leaves them out, so those plan directories still resume."""
    given = d.model_fields_set
    key: dict[str, Any] = {name: getattr(d, name) if name in given else None for name in ("idle_s", "total_s")}
    key.update({name: getattr(d, name) for name in ("connect_s", "read_s") if name in given})
    return key


def _locate(root: yaml.Node | None, loc: Sequence[int | str]) -> tuple[int | None, list[str], int]:
    """Line (1-based) of the deepest node `loc` reaches, the keys walked, and how much of `loc` it used."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    path: list[str] = []
    used = 0
    for i, seg in enumerate(loc):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(seg):
                    line, node, used = k.start_mark.line + 1, v, i + 1
                    path.append(str(seg))
                    break
            # not a key in the file (a union's tag, or a missing field): stay at this node
        elif isinstance(node, yaml.SequenceNode) and isinstance(seg, int) and seg < len(node.value):
            node = node.value[seg]
            line, used = node.start_mark.line + 1, i + 1
            path.append(str(seg))
    return line, path, used


def _where(path: Path, root: yaml.Node | None, loc: Sequence[int | str]) -> str:
    line, found, used = _locate(root, loc)
    # segments past what the file holds: a missing field keeps its name, a union member is dropped
    rest = [str(s) for s in loc[used:] if "[" not in str(s)]
    key = ".".join(found + rest) or "(top level)"
    return f"{path}:{line}: {key}" if line is not None else f"{path}: {key}"


def _format_errors(path: Path, root: yaml.Node | None, err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        msg = explain(e)
        if isinstance(e.get("input"), str | int | float | bool) and e["type"] != "extra_forbidden":
            msg += f"; got {shown(e['input'])}"  # a scalar the user wrote (a mapping is the whole section)
        if e["type"] == "extra_forbidden":
            keys = known_keys(e["loc"])
            msg = (f"unknown key (misspelt? the keys here are {', '.join(keys)}; docs/plans.md)" if keys
                   else "unknown key (misspelt? see docs/plans.md for the keys each section takes)")
        lines.append(f"  {_where(path, root, e['loc'])}: {msg}")
    return f"plan {path} is not valid:\n" + "\n".join(lines)


def load_plan(path: Path) -> LoadedPlan:
    """Read, validate and expand a plan file. Raises PlanError naming file, line and key."""
    try:
        text = read_text(path, "plan", max_bytes=_PLAN_MAX_BYTES)
        root, data = load_yaml(text, f"plan {path}")
    except PlanError:
        raise
    except UsageError as e:
        raise PlanError(f"{e} A plan is a YAML file (docs/plans.md).") from None
    if not isinstance(data, dict):
        raise PlanError(f"plan {path}: the top level must be a mapping with at least `name` and `rigs` "
                        f"(see docs/plans.md); got {type(data).__name__}.")
    try:
        plan = Plan.model_validate(data)
    except ValidationError as e:
        raise PlanError(_format_errors(path, root, e)) from None
    rigs = expand_rigs(plan, lambda loc: _where(path, root, loc))
    return LoadedPlan(path=path, text=text, plan=plan, rigs=rigs)


def _sweep_label(value: Any) -> str:
    return "off" if value is None else str(value)


def expand_rigs(plan: Plan, where: Any = lambda loc: ".".join(map(str, loc))) -> list[ResolvedRig]:
    """Rigs in plan order, each sweep expanded into the product of its values."""
    out: list[ResolvedRig] = []
    for i, rig in enumerate(plan.rigs):
        out.extend(_expand_one(plan, i, rig, where))
    seen: dict[str, int] = {}
    for r in out:
        seen[r.name] = seen.get(r.name, 0) + 1
    dup = [n for n, c in seen.items() if c > 1]
    if dup:
        raise PlanError(f"{where(('rigs',))}: rig names must be unique (after sweep expansion); "
                        f"repeated: {', '.join(dup)}. Give each rig its own `name`.")
    return out


def _expand_one(plan: Plan, i: int, rig: PlanRig, where: Any) -> list[ResolvedRig]:
    spec = rig.spec
    section = "embedded" if rig.embedded else "launch" if rig.launch else "endpoint"
    suites = list(rig.suites or plan.suites)
    if not rig.sweep:
        return [ResolvedRig(rig.name, spec, suites, rig.api_key_env)]
    fields = type(spec).model_fields
    for key in rig.sweep:
        if key not in fields or key == "kind":
            raise PlanError(f"{where(('rigs', i, 'sweep', key))}: {key!r} is not a setting of this {section} "
                            f"rig; sweepable: {', '.join(k for k in fields if k != 'kind')}.")
    keys = list(rig.sweep)
    out = []
    base = spec.model_dump()
    for combo in itertools.product(*(rig.sweep[k] for k in keys)):
        try:
            swept = type(spec).model_validate({**base, **dict(zip(keys, combo, strict=True))})
        except ValidationError as e:
            first = e.errors()[0]
            key = str(first["loc"][0]) if first["loc"] else keys[0]
            raise PlanError(f"{where(('rigs', i, 'sweep', key))}: value {dict(zip(keys, combo, strict=True))} "
                            f"is not valid: {first['msg']}") from None
        values = dict(zip(keys, combo, strict=True))
        if "{" in rig.name:  # a name template: "depth-{draft_max}"
            try:
                name = rig.name.format(**{k: _sweep_label(v) for k, v in values.items()})
            except (KeyError, IndexError, ValueError) as e:
                raise PlanError(f"{where(('rigs', i, 'name'))}: the name template {rig.name!r} names "
                                f"{e}, which is not swept; swept: {', '.join(keys)}.") from None
        else:
            name = rig.name + "-" + "-".join(f"{k}={_sweep_label(v)}" for k, v in values.items())
        out.append(ResolvedRig(name, swept, suites, rig.api_key_env))
    return out


def is_endpoint(rig: ResolvedRig) -> bool:
    return isinstance(rig.spec, EndpointSpec)
