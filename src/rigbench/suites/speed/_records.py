"""Moved to `rigbench.records` (issue 13); these names stay importable from here until every
caller imports them from there."""

from rigbench.records import (
    SpeedBatch,
    SpeedRequest,
    SpeedSkip,
)

__all__ = [
    "SpeedBatch",
    "SpeedRequest",
    "SpeedSkip",
]
