"""Suites turn a plan slice into records. `build_suites` maps names from the CLI/plan to suites."""

from __future__ import annotations

from typing import Any

from rigbench.errors import UsageError
from rigbench.suites._context import NullProgress, Progress, RigInfo, Suite, SuiteContext

__all__ = ["SUITE_NAMES", "NullProgress", "Progress", "RigInfo", "Suite", "SuiteContext", "build_suites"]

SUITE_NAMES = ("speed",)


def build_suites(
    names: list[str],
    *,
    profile: str = "quick",
    scenarios: list[str] | None = None,
    repetitions: int = 5,
    warmup: int = 1,
    concurrency: list[int] | None = None,
) -> tuple[list[Suite], dict[str, dict[str, Any]]]:
    """Suites to run, in order, and their resolved settings (recorded in the run's plan)."""
    from rigbench.suites.speed import SpeedSettings, SpeedSuite

    suites: list[Suite] = []
    settings: dict[str, dict[str, Any]] = {}
    for name in names:
        if name == "speed":
            sp = SpeedSettings(profile=profile, scenarios=scenarios, repetitions=repetitions, warmup=warmup,
                               concurrency=concurrency)
            suites.append(SpeedSuite(sp))
            settings["speed"] = sp.as_dict()
        else:
            raise UsageError(f"unknown suite {name!r}; available: {', '.join(SUITE_NAMES)}.")
    return suites, settings
