"""Moved to `rigbench.records` (issue 13); these names stay importable from here until every
caller imports them from there."""

from rigbench.records import (
    BFCLItemRecord,
    Exchange,
    ProbeRecord,
    ProbeVerdict,
    TaskStopReason,
    TaskTrialRecord,
    ToolTrialRecord,
    TurnObservation,
)

__all__ = [
    "BFCLItemRecord",
    "Exchange",
    "ProbeRecord",
    "ProbeVerdict",
    "TaskStopReason",
    "TaskTrialRecord",
    "ToolTrialRecord",
    "TurnObservation",
]
