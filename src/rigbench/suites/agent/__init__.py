"""Agent readiness: conformance probes, tool-call cases, BFCL, multi-turn tasks in a sandbox."""

from rigbench.suites.agent._bfcl import BFCL_CATEGORIES, BFCL_VERSION, BFCLSuite
from rigbench.suites.agent._records import (
    BFCLItemRecord,
    Exchange,
    ProbeRecord,
    ProbeVerdict,
    TaskTrialRecord,
    ToolTrialRecord,
    TurnObservation,
)
from rigbench.suites.agent._suite import AgentSuite
from rigbench.suites.agent._tasks import RepoTaskSuite
from rigbench.suites.agent._toolcalls import TOOL_CASES, ToolCallSuite
from rigbench.suites.agent.probes import PROBES, ProbesSuite

__all__ = [
    "BFCL_CATEGORIES",
    "BFCL_VERSION",
    "PROBES",
    "TOOL_CASES",
    "AgentSuite",
    "BFCLItemRecord",
    "BFCLSuite",
    "Exchange",
    "ProbeRecord",
    "ProbeVerdict",
    "ProbesSuite",
    "RepoTaskSuite",
    "TaskTrialRecord",
    "ToolCallSuite",
    "ToolTrialRecord",
    "TurnObservation",
]
