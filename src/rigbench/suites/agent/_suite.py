"""`--suite agent`: the probes, the tool-call cases, BFCL and the multi-turn tasks, in that order."""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.sandbox import require_confinement
from rigbench.suites._context import Suite, SuiteContext
from rigbench.suites.agent._bfcl import BFCLSuite
from rigbench.suites.agent._settings import AGENT_PARTS, AgentSettings
from rigbench.suites.agent._tasks import RepoTaskSuite
from rigbench.suites.agent._toolcalls import ToolCallSuite
from rigbench.suites.agent.probes import ProbesSuite

__all__ = ["AgentSuite"]


class AgentSuite:
    """The agent-readiness `parts` (default all, in AGENT_PARTS order), each given the same typed
    settings (AgentSettings: its fields and defaults)."""

    name = "agent"

    def __init__(self, settings: AgentSettings, *,
                 parts: Sequence[str] = AGENT_PARTS) -> None:
        self.settings = settings
        unknown = [p for p in parts if p not in AGENT_PARTS]
        if unknown:
            raise ValueError(f"agent parts {unknown}: the parts are {', '.join(AGENT_PARTS)}")
        self.parts = list(parts)

    async def run(self, ctx: SuiteContext) -> None:
        if "tasks" in self.parts:  # before any request: the tasks need the sandbox (or --allow-unconfined)
            require_confinement(self.settings.allow_unconfined)
        suites: dict[str, Suite] = {
            "probes": ProbesSuite(self.settings),
            "tools": ToolCallSuite(self.settings),
            "bfcl": BFCLSuite(self.settings),
            "tasks": RepoTaskSuite(self.settings),
        }
        for part in self.parts:
            await suites[part].run(ctx)
