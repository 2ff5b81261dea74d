"""Suites turn a plan slice into records. `build_suites` maps names from the CLI/plan to suites."""

from __future__ import annotations

from typing import Any

from rigbench.errors import UsageError
from rigbench.suites._context import NullProgress, Progress, RigInfo, Suite, SuiteContext

__all__ = ["SUITE_NAMES", "NullProgress", "Progress", "RigInfo", "Suite", "SuiteContext", "build_suites"]

SUITE_NAMES = ("speed", "agent", "agent_probes", "agent_tools", "agent_bfcl", "agent_tasks")

# Agent parts: CLI name -> the `parts` setting AgentSuite understands.
_AGENT_PARTS = {"agent_probes": "probes", "agent_tools": "tools", "agent_bfcl": "bfcl", "agent_tasks": "tasks"}


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
        elif name == "agent" or name in _AGENT_PARTS:
            from rigbench.suites.agent import AgentSuite

            agent = settings.setdefault("agent", {})
            parts = agent.setdefault("parts", [])
            for part in (["probes", "tools", "bfcl", "tasks"] if name == "agent" else [_AGENT_PARTS[name]]):
                if part not in parts:
                    parts.append(part)
            if not any(isinstance(x, AgentSuite) for x in suites):
                suites.append(AgentSuite())
        else:
            raise UsageError(f"unknown suite {name!r}; available: {', '.join(SUITE_NAMES)}.")
    return suites, settings
