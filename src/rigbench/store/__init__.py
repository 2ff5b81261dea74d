"""Durable, versioned run directories: header + append-only records."""

from rigbench.store._format import FORMAT_VERSION, HEADER_FILE, RECORDS_FILE
from rigbench.store._header import Finding, FindingKind, RunHeader, RunStatus, TrustVerdict
from rigbench.store._lock import LOCK_FILE, RunLock
from rigbench.store._run import RunReader, RunWriter, new_run_id, now_utc, source_data_id

__all__ = [
    "FORMAT_VERSION",
    "HEADER_FILE",
    "LOCK_FILE",
    "RECORDS_FILE",
    "Finding",
    "FindingKind",
    "RunHeader",
    "RunLock",
    "RunReader",
    "RunStatus",
    "RunWriter",
    "TrustVerdict",
    "new_run_id",
    "now_utc",
    "source_data_id",
]
