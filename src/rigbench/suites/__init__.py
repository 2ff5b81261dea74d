"""Suites turn a plan slice into records. `build_suites` maps names from the CLI/plan to suites."""

from __future__ import annotations

from typing import Any

from rigbench.errors import UsageError
from rigbench.suites._context import NullProgress, Progress, RigInfo, Suite, SuiteContext

__all__ = ["SUITE_NAMES", "NullProgress", "Progress", "RigInfo", "Suite", "SuiteContext", "build_suites"]

SUITE_NAMES = ("speed", "quality", "mmlu_pro", "packs", "effort", "agent", "agent_probes", "agent_tools", "agent_bfcl", "agent_tasks")

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
    suite_options: dict[str, dict[str, Any]] | None = None,
) -> tuple[list[Suite], dict[str, dict[str, Any]]]:
    """Suites to run, in order, and their resolved settings (recorded in the run's plan).

    `suite_options` holds per-suite settings (e.g. {"mmlu_pro": {"data": "/path", "questions_per_subject": 20}});
    each suite validates its own and rejects unknown keys.
    """
    opts = suite_options or {}
    from rigbench.suites.speed import SpeedSettings, SpeedSuite

    suites: list[Suite] = []
    settings: dict[str, dict[str, Any]] = {}
    for name in names:
        if name == "speed":
            sp = SpeedSettings(profile=profile, scenarios=scenarios, repetitions=repetitions, warmup=warmup,
                               concurrency=concurrency)
            suites.append(SpeedSuite(sp))
            settings["speed"] = sp.as_dict()
        elif name in ("quality", "mmlu_pro"):
            from rigbench.suites.quality import MMLUProSuite

            mm = MMLUProSuite(opts.get("mmlu_pro", {}))
            suites.append(mm)
            settings["mmlu_pro"] = mm.settings.model_dump(mode="json")
        elif name == "packs":
            from rigbench.suites.quality import PackSuite

            pk = PackSuite(opts.get("packs", {}))
            suites.append(pk)
            settings["packs"] = pk.settings.model_dump(mode="json")
        elif name == "effort":
            from rigbench.suites.quality import EffortSweepSuite

            ef = EffortSweepSuite(opts.get("effort", {}))
            suites.append(ef)
            settings["effort"] = ef.settings.model_dump(mode="json")
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
