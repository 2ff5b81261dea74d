"""Conformance probes: does the server honour what an agent framework asks of it? One module per
family; each probe gives a verdict with its evidence (docs/agent.md: how to add one)."""

from rigbench.suites.agent.probes._calls import CALL_MECHANICS
from rigbench.suites.agent.probes._controls import SAMPLING_CONTROLS
from rigbench.suites.agent.probes._protocol import FunctionProbe, Probe, ProbeRegistry, ProbeResult
from rigbench.suites.agent.probes._reasoning import REASONING
from rigbench.suites.agent.probes._session import ProbeSession
from rigbench.suites.agent.probes._suite import DEFAULT_PROBES, PROBES, ProbesSuite
from rigbench.suites.agent.probes._tool_choice import TOOL_CHOICE

__all__ = [
    "CALL_MECHANICS",
    "DEFAULT_PROBES",
    "PROBES",
    "REASONING",
    "SAMPLING_CONTROLS",
    "TOOL_CHOICE",
    "FunctionProbe",
    "Probe",
    "ProbeRegistry",
    "ProbeResult",
    "ProbeSession",
    "ProbesSuite",
]
