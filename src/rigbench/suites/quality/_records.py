"""Moved to `rigbench.records` (issue 13); these names stay importable from here until every
caller imports them from there."""

from rigbench.records import (
    Extraction,
    GradeResult,
    MMLUProAnswer,
    MMLUProConfig,
    PackAnswer,
    PackConfig,
)

__all__ = [
    "Extraction",
    "GradeResult",
    "MMLUProAnswer",
    "MMLUProConfig",
    "PackAnswer",
    "PackConfig",
]
