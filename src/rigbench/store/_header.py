"""The run header: what was run, on what, and how it ended."""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field, model_validator

from rigbench.records import Fingerprint, Frozen, older_fingerprint
from rigbench.store._format import FORMAT_VERSION, TYPED_FINGERPRINT

__all__ = ["Finding", "FindingKind", "RunHeader", "RunStatus", "TrustVerdict"]

# running: in progress, or killed (the reader shows a `running` run it did not see end as incomplete)
RunStatus = Literal["running", "complete", "interrupted", "failed"]


class FindingKind(StrEnum):
    """What untrusted a run: one kind per check that can (reports match on the kind, never on the words)."""

    PREFLIGHT = "preflight"  # a config trap found against the live server (honesty/_preflight.py)
    SANITY = "sanity"  # the known-answer gate failed (honesty/_sanity.py)
    SANITY_SKIPPED = "sanity_skipped"  # --no-sanity: answers were not checked
    REJECTED = "rejected"  # the server turned away most measured requests
    GIBBERISH = "gibberish"  # measured outputs no working model would write
    TRAFFIC = "traffic"  # prompt dependence, reported usage, server timings, prefix cache (honesty/_traffic.py)
    BUFFERED_LATENCY = "buffered_latency"  # streams arrived buffered: TTFT and ITL not the engine's
    HOST_BUSY = "host_busy"  # speed measured while other work used the engine's cores (analysis/_host.py)
    CLIENTS = "clients"  # client actors' clocks or load (rigbench.scale)
    OTHER = "other"  # a stored text no lead below matches and no record names (e.g. an older version's words)


# How each kind's text begins, written by its check and read back here: run.json stores a finding as its text
# (the run format keeps `reasons` a list of strings), so a stored run's kinds come from these, in this one place.
# SANITY and TRAFFIC write many sentences with no common lead: their records (`sanity`, `traffic`) keep each
# text, which a reader with the run hands to `read` (analysis.run_findings).
_LEADS: dict[FindingKind, re.Pattern[str]] = {
    FindingKind.PREFLIGHT: re.compile(r"preflight: "),
    FindingKind.SANITY_SKIPPED: re.compile(r"the sanity gate was skipped "),
    FindingKind.REJECTED: re.compile(r"the server rejected \d+ of \d+ measured requests "),
    FindingKind.GIBBERISH: re.compile(r"\d+ of \d+ measured outputs look like gibberish"),
    FindingKind.BUFFERED_LATENCY: re.compile(r"latency figures: "),
    FindingKind.HOST_BUSY: re.compile(r"host busy: "),
    FindingKind.CLIENTS: re.compile(r"client actor "),
}


class Finding(Frozen):
    """One reason a run is untrusted: its kind, its text as the report shows it, and the figures behind it
    (at run time; a stored run keeps the text, from which `read` recovers the kind)."""

    kind: FindingKind
    text: str
    figures: dict[str, float] = Field(default_factory=dict)

    @classmethod
    def read(cls, text: str, named: Mapping[str, FindingKind] | None = None) -> Finding:
        """A stored reason's finding: the kind a record `named` it with, else the kind whose lead its text
        begins with, else OTHER."""
        kind = (named or {}).get(text) or next((k for k, lead in _LEADS.items() if lead.match(text)),
                                               FindingKind.OTHER)
        return cls(kind=kind, text=text)


class TrustVerdict(Frozen):
    """Whether the run's speed numbers can be stood behind, and if not, why."""

    trusted: bool
    reasons: list[str] = Field(default_factory=list)  # each finding's text (the run format's field)

    @classmethod
    def of(cls, findings: list[Finding]) -> TrustVerdict:
        return cls(trusted=not findings, reasons=[f.text for f in findings])

    def findings(self, named: Mapping[str, FindingKind] | None = None) -> list[Finding]:
        """The reasons as findings (`named`: texts whose kind a record of the run gives: `Finding.read`)."""
        return [Finding.read(r, named) for r in self.reasons]


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
