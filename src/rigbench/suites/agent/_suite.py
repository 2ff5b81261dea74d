"""`--suite agent`: the probes, the tool-call cases, BFCL and the multi-turn tasks, in that order."""

from __future__ import annotations

from rigbench.sandbox import require_confinement
from rigbench.suites._context import Suite, SuiteContext
from rigbench.suites.agent._bfcl import BFCLSuite
from rigbench.suites.agent._tasks import RepoTaskSuite
from rigbench.suites.agent._toolcalls import ToolCallSuite
from rigbench.suites.agent.probes import ProbesSuite

__all__ = ["AgentSuite"]


class AgentSuite:
    """Every agent-readiness part. Settings (all optional) and defaults:

    tool_trials=3, bfcl_per_category=10 (0 skips BFCL), bfcl_trials=1, bfcl_data_dir=None,
    agent_tasks=all shipped, task_trials=3, max_turns=20, repeat_limit=3, task_max_tokens=1024,
    parts=["probes", "tools", "bfcl", "tasks"].
    """

    name = "agent"

    async def run(self, ctx: SuiteContext) -> None:
        parts = ctx.settings.get("parts") or ["probes", "tools", "bfcl", "tasks"]
        if "tasks" in parts:  # before any request: the tasks need the sandbox (or --allow-unconfined)
            require_confinement(bool(ctx.settings.get("allow_unconfined", False)))
        suites: dict[str, Suite] = {
            "probes": ProbesSuite(),
            "tools": ToolCallSuite(),
            "bfcl": BFCLSuite(),
            "tasks": RepoTaskSuite(),
        }
        for part in parts:
            await suites[part].run(ctx)
