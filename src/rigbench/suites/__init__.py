"""Suites turn a plan slice into records. `build_suites` maps names from the CLI/plan to suites."""

from __future__ import annotations

from typing import Any, NamedTuple

from rigbench.errors import UsageError
from rigbench.suites._context import NullProgress, Progress, Suite, SuiteContext
from rigbench.suites._settings import SuiteSettings
from rigbench.suites.agent import AgentSuite
from rigbench.suites.agent._settings import AGENT_PARTS
from rigbench.suites.load import LoadSuite
from rigbench.suites.quality import EffortSweepSuite, MMLUProSuite, PackSuite
from rigbench.suites.speed import SpeedSuite

__all__ = ["SUITE_NAMES", "BuiltSuites", "NullProgress", "Progress", "Suite", "SuiteContext", "SuiteSettings",
           "build_suites"]

SUITE_NAMES = ("speed", "load", "quality", "mmlu_pro", "packs", "effort", "agent", "agent_probes", "agent_tools", "agent_bfcl", "agent_tasks")

# Agent parts: CLI name -> the `parts` setting AgentSuite understands.
_AGENT_PARTS = {"agent_probes": "probes", "agent_tools": "tools", "agent_bfcl": "bfcl", "agent_tasks": "tasks"}


class BuiltSuites(NamedTuple):
    suites: list[Suite]  # to run, in order
    recorded: dict[str, dict[str, Any]]  # each one's resolved settings, as run.json records them


def build_suites(names: list[str], settings: SuiteSettings | None = None) -> BuiltSuites:
    """The suites `names` asks for (CLI `--suite` or a plan's `suites`), configured by `settings`."""
    s = settings or SuiteSettings()

    suites: list[Suite] = []
    recorded: dict[str, dict[str, Any]] = {}
    agent_parts: list[str] = []
    for name in names:
        if name == "speed":
            suites.append(SpeedSuite(s.speed))
            recorded["speed"] = s.speed.as_dict()
        elif name == "load":
            missing = s.load.missing()
            if missing:
                raise UsageError(missing + ".")
            suites.append(LoadSuite(s.load))
            recorded["load"] = s.load.as_dict()
        elif name in ("quality", "mmlu_pro"):
            suites.append(MMLUProSuite(s.mmlu_pro))
            recorded["mmlu_pro"] = s.mmlu_pro.model_dump(mode="json")
        elif name == "packs":
            suites.append(PackSuite(s.packs))
            recorded["packs"] = s.packs.model_dump(mode="json")
        elif name == "effort":
            suites.append(EffortSweepSuite(s.effort))
            recorded["effort"] = s.effort.model_dump(mode="json")
        elif name == "agent" or name in _AGENT_PARTS:
            for part in (list(AGENT_PARTS) if name == "agent" else [_AGENT_PARTS[name]]):
                if part not in agent_parts:
                    agent_parts.append(part)
            agent = AgentSuite(s.agent, parts=agent_parts)
            at = next((i for i, x in enumerate(suites) if isinstance(x, AgentSuite)), len(suites))
            suites[at:at + 1] = [agent]  # one agent suite, where the first agent name put it
            recorded["agent"] = s.agent.recorded(agent_parts)
        else:
            raise UsageError(f"unknown suite {name!r}; available: {', '.join(SUITE_NAMES)}.")
    return BuiltSuites(suites, recorded)
