"""Moved to `rigbench.records` (issue 13); these names stay importable from here until every
caller imports them from there."""

from rigbench.records import (
    ChunkKind,
    RequestError,
    RequestErrorKind,
    StreamResult,
)

__all__ = [
    "ChunkKind",
    "RequestError",
    "RequestErrorKind",
    "StreamResult",
]
