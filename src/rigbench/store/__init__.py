"""Durable, versioned run directories: header + append-only records."""

from rigbench.store._format import FORMAT_VERSION
from rigbench.store._header import RunHeader, RunStatus, TrustVerdict
from rigbench.store._run import RunReader, RunWriter, new_run_id, source_data_id

__all__ = [
    "FORMAT_VERSION",
    "RunHeader",
    "RunReader",
    "RunStatus",
    "RunWriter",
    "TrustVerdict",
    "new_run_id",
    "source_data_id",
]
