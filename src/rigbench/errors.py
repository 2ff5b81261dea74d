"""rigbench's own failures. A failure of the model or engine under test is *data* (a record with a
typed reason), never one of these.

Every message says what failed, what was observed, and what to do next.

    RigbenchError
    ├── UsageError            bad option, plan or input file (the user can fix it)
    │   └── LongRunError      a run projected past a day, stopped there (resumable with --allow-long-run)
    ├── BusyHostError         a measured window found the host busy, stopped there (resumable with --allow-busy-host)
    ├── SetupError            fetching or building something rigbench needs (model, llama-server)
    ├── RigError              the engine process or endpoint
    │   ├── RigStartError     a launched engine exited or never became healthy
    │   ├── PortInUseError    the chosen port is taken
    │   └── EndpointError     an endpoint is unreachable or does not speak the OpenAI API
    │       └── EndpointLostError  an attached server stopped answering mid-run (the run is resumable)
    ├── StoreError            a run directory is missing, corrupt or of an unknown format
    │   └── StoreWriteError   a run directory cannot be written (disk full, I/O error; the run is resumable)
    ├── ProbeError            an agent probe is malformed or returned a malformed result
    └── AnalysisError         the data cannot support the requested figure
"""

from __future__ import annotations

__all__ = [
    "AnalysisError",
    "BusyHostError",
    "EndpointError",
    "EndpointLostError",
    "LongRunError",
    "PortInUseError",
    "ProbeError",
    "RigError",
    "RigStartError",
    "RigbenchError",
    "SetupError",
    "StoreError",
    "StoreWriteError",
    "UsageError",
]


class RigbenchError(Exception):
    """Base of every error rigbench raises on purpose; the CLI prints these without a traceback."""


class UsageError(RigbenchError):
    pass


class LongRunError(UsageError):
    """The speed suite projected the run past a day from its measured speed and stopped; resumable."""


class BusyHostError(RigbenchError):
    """Other work used the host's CPUs during a measured window: the run stopped there, what was measured is
    kept, and `--resume` goes on (with `--allow-busy-host` to keep figures measured on a busy host)."""


class SetupError(RigbenchError):
    pass


class RigError(RigbenchError):
    pass


class RigStartError(RigError):
    pass


class PortInUseError(RigError):
    pass


class EndpointError(RigError):
    pass


class EndpointLostError(EndpointError):
    pass


class StoreError(RigbenchError):
    pass


class StoreWriteError(StoreError):
    """Writing the run directory failed (ENOSPC, EIO, ...): rigbench's setup, not the rig; resumable."""


class AnalysisError(RigbenchError):
    pass


class ProbeError(RigbenchError):
    pass
