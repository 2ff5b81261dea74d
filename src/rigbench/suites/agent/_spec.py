"""The agent suite's spec (suites/_spec.py): `agent` runs every part, `agent_tools` (...) one; the parts
asked run as one suite, where the first of them was named."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.suites._context import Suite
from rigbench.suites._spec import SuiteFlag, SuiteSpec, comma_list
from rigbench.suites.agent._settings import AGENT_PARTS, AgentSettings
from rigbench.suites.agent._suite import AgentSuite

__all__ = ["AGENT"]


def _build(settings: AgentSettings, names: Sequence[str]) -> tuple[Suite, dict[str, Any]]:
    parts: list[str] = []
    for name in names:
        for part in (AGENT_PARTS if name == "agent" else [name.removeprefix("agent_")]):
            if part not in parts:
                parts.append(part)
    return AgentSuite(settings, parts=parts), settings.recorded(parts)


AGENT = SuiteSpec(
    key="agent", settings=AgentSettings, names=("agent",), parts=tuple(f"agent_{p}" for p in AGENT_PARTS),
    build=_build,
    flags=(SuiteFlag("tool_trials", "tool_trials"), SuiteFlag("bfcl_per_category", "bfcl_per_category"),
           SuiteFlag("bfcl_trials", "bfcl_trials"), SuiteFlag("bfcl_data", "bfcl_data_dir"),
           SuiteFlag("agent_tasks", "agent_tasks", comma_list), SuiteFlag("task_trials", "task_trials"),
           SuiteFlag("max_turns", "max_turns"), SuiteFlag("task_max_tokens", "task_max_tokens")))
