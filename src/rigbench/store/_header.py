"""The run header: what was run, on what, and how it ended."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from rigbench.records import Fingerprint, Frozen, older_fingerprint
from rigbench.store._format import FORMAT_VERSION, TYPED_FINGERPRINT

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
    fingerprint: Fingerprint | None = None  # None until the rig is up and fingerprinted
    trust: TrustVerdict | None = None
    error: str | None = None  # what stopped a failed run
    source_data_id: str | None = None  # content hash of records + plan + fingerprint

    @model_validator(mode="before")
    @classmethod
    def _older_fingerprint(cls, data: Any) -> Any:
        """Run formats 1-7 stored the fingerprint as a plain object, `{}` before the rig was up."""
        version = data.get("format_version", FORMAT_VERSION) if isinstance(data, dict) else None
        if isinstance(version, int) and version < TYPED_FINGERPRINT and "fingerprint" in data:
            return {**data, "fingerprint": older_fingerprint(data["fingerprint"])}
        return data
