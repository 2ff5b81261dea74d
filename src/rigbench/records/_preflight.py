"""The preflight record: the engine command line as read, and what was found in it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rigbench.records._base import Frozen, Record

__all__ = ["PreflightFinding", "PreflightReport", "PreflightSeverity", "ServingCommand"]

PreflightSeverity = Literal["error", "warn", "info"]


class ServingCommand(Frozen):
    """What rigbench read from an engine command line."""

    # an engine's name ("vllm", "sglang", "llamacpp", or a registered one) or "unknown"; stored runs
    # hold only the built-in names, which still load
    engine: str
    argv: list[str]
    model: str | None = None
    options: dict[str, str | bool] = Field(default_factory=dict)  # canonical long flag -> value (True if bare)


class PreflightFinding(Frozen):
    id: str
    severity: PreflightSeverity
    problem: str
    evidence: str
    fix: str


class PreflightReport(Record):
    kind: Literal["preflight"] = "preflight"
    unit_id: str = "preflight"
    command: ServingCommand | None
    findings: list[PreflightFinding] = Field(default_factory=list)

    @property
    def errors(self) -> list[PreflightFinding]:
        return [f for f in self.findings if f.severity == "error"]
