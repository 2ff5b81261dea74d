"""The suites, registered once. A suite is a package under suites/ whose `_spec.py` defines its `SuiteSpec`
(found here by looking, not by a list); `SuiteSettings` (suites/_settings.py) holds one typed field per suite,
and that field is the registration: its order is `SUITES`' order. The CLI's options and `--suite` help,
`--set`, the plan's suite sections and `build_suites` read `SUITES`. A spec with no field, or a field with no
spec, is an error at import."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any, NamedTuple

from rigbench.errors import UsageError
from rigbench.suites._context import Suite
from rigbench.suites._settings import SuiteSettings
from rigbench.suites._spec import SuiteSpec

__all__ = ["SUITES", "SUITE_NAMES", "BuiltSuites", "build_suites", "suite_help", "suite_spec"]



def _written() -> list[SuiteSpec]:
    """Every SuiteSpec the suite packages define in their `_spec.py`."""
    found = []
    for sub in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if sub.ispkg:
            try:
                mod = importlib.import_module(f"{__package__}.{sub.name}._spec")
            except ModuleNotFoundError as e:
                if e.name != f"{__package__}.{sub.name}._spec":
                    raise
                continue  # a package of shared code, not a suite
            found += [v for v in vars(mod).values() if isinstance(v, SuiteSpec)]
    return found


def _registered(written: list[SuiteSpec]) -> tuple[SuiteSpec, ...]:
    """The specs in SuiteSettings' field order; a spec and its field must agree on key and settings type."""
    by_key = {spec.key: spec for spec in written}
    fields = SuiteSettings.model_fields
    unregistered = sorted(set(by_key) - set(fields))
    unwritten = sorted(set(fields) - set(by_key))
    wrong = sorted(k for k in set(by_key) & set(fields) if fields[k].annotation is not by_key[k].settings)
    if unregistered or unwritten or wrong or len(by_key) != len(written):
        raise TypeError(f"SuiteSettings must hold one field per suite spec, typed by its settings: specs without a "
                        f"field {unregistered}, fields without a spec {unwritten}, mistyped {wrong}, specs "
                        f"{[s.key for s in written]}")
    return tuple(by_key[k] for k in fields)


# In the order `--suite`'s help and an unknown name's message list them: SuiteSettings' fields.
SUITES: tuple[SuiteSpec, ...] = _registered(_written())

SUITE_NAMES = tuple(n for s in SUITES for n in s.all_names)

_BY_NAME = {n: s for s in SUITES for n in s.all_names}


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
