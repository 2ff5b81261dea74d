"""Agent readiness: conformance probes, tool-call cases, BFCL, multi-turn tasks in a sandbox."""

from rigbench.suites.agent._bfcl import BFCL_CATEGORIES, BFCL_VERSION, BFCLSuite
from rigbench.suites.agent._settings import AgentSettings
from rigbench.suites.agent._suite import AgentSuite
from rigbench.suites.agent._tasks import RepoTaskSuite
from rigbench.suites.agent._toolcalls import TOOL_CASES, ToolCallSuite
from rigbench.suites.agent.probes import PROBES, ProbesSuite

__all__ = [
    "BFCL_CATEGORIES",
    "BFCL_VERSION",
    "PROBES",
    "TOOL_CASES",
    "AgentSettings",
    "AgentSuite",
    "BFCLSuite",
    "ProbesSuite",
    "RepoTaskSuite",
    "ToolCallSuite",
]
