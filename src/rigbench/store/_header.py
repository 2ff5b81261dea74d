"""The run header: what was run, on what, and how it ended."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rigbench.records import Frozen
from rigbench.store._format import FORMAT_VERSION

__all__ = ["RunHeader", "RunStatus", "TrustVerdict"]

# running: in progress, or killed (the reader shows a `running` run it did not see end as incomplete)
RunStatus = Literal["running", "complete", "interrupted", "failed"]


class TrustVerdict(Frozen):
    """Whether the run's speed numbers can be stood behind, and if not, why."""

    trusted: bool
    reasons: list[str] = Field(default_factory=list)


class RunHeader(Frozen):
    format_version: int = FORMAT_VERSION
    run_id: str
    created_at: str  # ISO 8601, UTC
    finished_at: str | None = None
    status: RunStatus = "running"
    rigbench_version: str
    command: list[str] = Field(default_factory=list)  # rigbench's own argv (secrets never appear)
    plan: dict[str, Any] = Field(default_factory=dict)  # the resolved settings of this run
    fingerprint: dict[str, Any] = Field(default_factory=dict)  # rigbench.rig.Fingerprint, dumped
    trust: TrustVerdict | None = None
    error: str | None = None  # what stopped a failed run
    source_data_id: str | None = None  # content hash of records + plan + fingerprint
