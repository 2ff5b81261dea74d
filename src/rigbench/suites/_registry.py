"""The suites, registered once: `SUITES` is the one list of them. The CLI's options and `--suite` help,
`--set`, the plan's suite sections and `build_suites` read it; `SuiteSettings` holds one typed field per
spec (checked against this list at import)."""

from __future__ import annotations

from typing import Any, NamedTuple

from rigbench.errors import UsageError
from rigbench.suites._context import Suite
from rigbench.suites._settings import SuiteSettings
from rigbench.suites._spec import SuiteSpec
from rigbench.suites.agent._spec import AGENT
from rigbench.suites.load._spec import LOAD
from rigbench.suites.quality._spec import EFFORT, MMLU_PRO, PACKS
from rigbench.suites.speed._spec import SPEED

__all__ = ["SUITES", "SUITE_NAMES", "BuiltSuites", "build_suites", "suite_help", "suite_spec"]

# In the order `--suite`'s help and an unknown name's message list them.
SUITES: tuple[SuiteSpec, ...] = (SPEED, LOAD, MMLU_PRO, PACKS, EFFORT, AGENT)

SUITE_NAMES = tuple(n for s in SUITES for n in s.all_names)

_BY_NAME = {n: s for s in SUITES for n in s.all_names}

if {s.key: s.settings for s in SUITES} != {k: f.annotation for k, f in SuiteSettings.model_fields.items()}:
    raise TypeError("SuiteSettings must hold one field per registered suite, typed by its spec's settings")


def suite_spec(name: str) -> SuiteSpec:
    """The spec of a suite name (`--suite`, a plan's `suites:`), or a usage error listing the names."""
    spec = _BY_NAME.get(name)
    if spec is None:
        raise UsageError(f"unknown suite {name!r}; available: {', '.join(SUITE_NAMES)}.")
    return spec


def suite_help() -> str:
    """`--suite`'s list of names: each suite's, then its parts'."""
    return ", ".join(", ".join(s.names) + (f" (or a part of it: {', '.join(s.parts)})" if s.parts else "")
                     for s in SUITES)


class BuiltSuites(NamedTuple):
    suites: list[Suite]  # to run, in order
    recorded: dict[str, dict[str, Any]]  # each one's resolved settings, as run.json records them


def build_suites(names: list[str], settings: SuiteSettings | None = None) -> BuiltSuites:
    """The suites `names` asks for (CLI `--suite` or a plan's `suites`), configured by `settings`. A suite of
    parts is one suite, where the first of its names put it, running every part asked."""
    s = settings or SuiteSettings()
    suites: list[Suite] = []
    recorded: dict[str, dict[str, Any]] = {}
    asked: dict[str, list[str]] = {}  # names asked so far, per suite of parts
    at: dict[str, int] = {}  # where a suite of parts sits in `suites`
    for name in names:
        spec = suite_spec(name)
        if spec.parts:
            asked.setdefault(spec.key, []).append(name)
            suite, recorded[spec.key] = spec.build(getattr(s, spec.key), asked[spec.key])
            i = at.setdefault(spec.key, len(suites))
            suites[i:i + 1] = [suite]
        else:
            suite, recorded[spec.key] = spec.build(getattr(s, spec.key), [name])
            suites.append(suite)
    return BuiltSuites(suites, recorded)
