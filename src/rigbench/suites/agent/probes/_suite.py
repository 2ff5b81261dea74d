"""Running a registry of probes: one `agent_probe` record per probe, in registry order."""

from __future__ import annotations

from rigbench.records import ProbeRecord
from rigbench.suites._context import SuiteContext
from rigbench.suites.agent._settings import AgentSettings
from rigbench.suites.agent.probes._calls import CALL_MECHANICS
from rigbench.suites.agent.probes._controls import SAMPLING_CONTROLS
from rigbench.suites.agent.probes._protocol import ProbeRegistry, accept_result
from rigbench.suites.agent.probes._reasoning import REASONING
from rigbench.suites.agent.probes._session import ProbeSession
from rigbench.suites.agent.probes._tool_choice import TOOL_CHOICE

__all__ = ["DEFAULT_PROBES", "PROBES", "ProbesSuite"]

# The order is part of the checks: the call-mechanics probes judge the tool_choice exchanges, and
# the thinking probe compares with the reasoning probe's answer.
DEFAULT_PROBES = ProbeRegistry([*TOOL_CHOICE, *CALL_MECHANICS, *REASONING, *SAMPLING_CONTROLS])
PROBES = DEFAULT_PROBES.names


class ProbesSuite:
    """Runs every probe of `registry` once (deterministic requests at temperature 0). Settings:
    `probe_max_tokens`, `context_length` (for the overflow probe when the server does not say)."""

    name = "agent_probes"

    def __init__(self, settings: AgentSettings, *,
                 registry: ProbeRegistry = DEFAULT_PROBES) -> None:
        self.settings = settings
        self.registry = registry

    async def run(self, ctx: SuiteContext) -> None:
        if all(f"agent/probe/{name}" in ctx.done_units for name in self.registry.names):
            return
        session = ProbeSession(ctx, max_tokens=self.settings.probe_max_tokens,
                               context_length=self.settings.context_length)
        task = ctx.progress.task("agent: conformance probes", len(self.registry))
        for probe in self.registry:
            uid = f"agent/probe/{probe.name}"
            # Probes that judge earlier exchanges need those exchanges even on resume.
            result = accept_result(probe, await probe.run(session))
            if uid not in ctx.done_units:
                ctx.writer.append(ProbeRecord(unit_id=uid, probe=probe.name, verdict=result.verdict,
                                              detail=result.detail, observed=result.observed,
                                              exchanges=result.exchanges))
            ctx.progress.advance(task)
        ctx.progress.done(task)
