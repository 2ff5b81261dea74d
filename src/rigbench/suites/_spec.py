"""A suite as the unit of extension: its spec (`SuiteSpec`) says once what every layer asks of it.

The plan key and `SuiteSettings` field (`key`), the names `--suite` and a plan's `suites:` take for it, its
typed settings model, the `rigbench run` options that set those settings (`SuiteFlag`: the option, the
setting it sets, how its value is read), and how the suite is built from its settings and recorded in
run.json. The CLI, `--set`, the plan's validation and the plan loader loop over the specs
(`suites/_registry.py`); nothing else lists the suites.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rigbench.records import Input
from rigbench.suites._context import Suite

__all__ = ["SuiteFlag", "SuiteSpec", "as_given", "comma_list", "first", "non_empty", "only_when_on", "text"]


def as_given(value: Any) -> Any:
    return value


def comma_list(value: Any) -> list[str] | None:
    """`a, b,c` as ["a", "b", "c"] (lists are comma-separated in every option)."""
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


def first(value: Any) -> Any:
    """The first of a list option's values (`--pack a,b` for the effort sweep: `a`)."""
    return value[0] if value else None


def non_empty(value: Any) -> Any:
    return value or None


def only_when_on(value: Any) -> bool | None:
    """A switch (`--sweep`): given when on; off leaves the setting's default."""
    return True if value else None


def text(value: Any) -> str | None:
    """A path option as the setting's text."""
    return None if value is None else str(value)


@dataclass(frozen=True)
class SuiteFlag:
    """One `rigbench run` option that sets one of a suite's settings, under one name each side."""

    option: str  # `rigbench run`'s parameter (`plan.RunOptions` field): --max-concurrency is max_concurrency
    setting: str  # the suite's settings field (the plan file's key under the suite's section)
    read: Callable[[Any], Any] = as_given  # the option's value as the setting takes it; None: not given

    @property
    def flag(self) -> str:
        return "--" + self.option.replace("_", "-")


@dataclass(frozen=True)
class SuiteSpec:
    """One suite, registered once (`suites/_registry.py: SUITES`)."""

    key: str  # the plan key, `SuiteSettings` field and run.json `plan.suites` key
    settings: type[Input]  # its typed settings model (the plan's `key:` section)
    names: tuple[str, ...]  # what `--suite` and a plan's `suites:` take for it
    flags: tuple[SuiteFlag, ...]  # the `rigbench run` options that set its settings, in the help's order
    # the suite for its settings and the names asked for it so far, and its settings as run.json records them
    build: Callable[[Any, Sequence[str]], tuple[Suite, dict[str, Any]]]
    parts: tuple[str, ...] = ()  # names of its parts (`agent_tools`): one suite runs every part asked

    def options(self, given: Mapping[str, Any] | Any) -> dict[str, Any]:
        """The settings the options give (the rest keep the settings model's defaults): from `rigbench run`'s
        parameters by name, or the typed options (`plan.RunOptions`) that carry them."""
        def get(name: str) -> Any:
            return given.get(name) if isinstance(given, Mapping) else getattr(given, name, None)

        out = {}
        for f in self.flags:
            value = get(f.option)
            value = None if value is None else f.read(value)
            if value is not None:
                out[f.setting] = value
        return out

    @property
    def all_names(self) -> tuple[str, ...]:
        return self.names + self.parts
