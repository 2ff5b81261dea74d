"""The types a run stores, at the bottom of the import graph: everything may import them, they import
nothing of rigbench's.

`Record` is one line of a run's records file (`kind` + `unit_id`, frozen, unknown fields rejected);
`AnyRecord` is the union of every kind the store writes, discriminated by `kind`.
"""

from rigbench.records._agent import (
    BFCLItemRecord,
    Exchange,
    ProbeRecord,
    ProbeVerdict,
    TaskStopReason,
    TaskTrialRecord,
    ToolTrialRecord,
    TurnObservation,
)
from rigbench.records._base import Frozen, Input, Record
from rigbench.records._clients import ClientClock, ClientShare
from rigbench.records._fingerprint import (
    EngineBinary,
    Fingerprint,
    HostInfo,
    MemoryBandwidth,
    ModelInfo,
    Speculation,
    older_fingerprint,
)
from rigbench.records._gibberish import GibberishFinding, GibberishKind, GibberishSeverity, OutputScreen
from rigbench.records._host import EngineLocation, GpuProcess, HostConditions
from rigbench.records._load import LoadMode, LoadRequest, LoadWindow, SloTargets
from rigbench.records._preflight import PreflightFinding, PreflightReport, PreflightSeverity, ServingCommand
from rigbench.records._quality import (
    OFF_LEVELS,
    Extraction,
    GradeResult,
    MMLUProAnswer,
    MMLUProConfig,
    PackAnswer,
    PackConfig,
    ReasoningForm,
    TokenSplitMethod,
)
from rigbench.records._sanity import SanityAnswer, SanityVerdict
from rigbench.records._selfcheck import SelfCheck
from rigbench.records._speed import SpeedBatch, SpeedRequest, SpeedSkip
from rigbench.records._startup import StartupTiming
from rigbench.records._stream import (
    ArrivalStamps,
    ChunkKind,
    RequestError,
    RequestErrorKind,
    RetryAttempt,
    StreamResult,
    send_lag_ns,
)
from rigbench.records._telemetry import Phase, TelemetryRecord, TelemetrySample
from rigbench.records._traffic import CacheSource, ScenarioPrefixCache, TrafficCheck
from rigbench.records._union import RECORD_TYPES, AnyRecord, record_adapter

__all__ = [
    "OFF_LEVELS",
    "RECORD_TYPES",
    "AnyRecord",
    "ArrivalStamps",
    "BFCLItemRecord",
    "CacheSource",
    "ChunkKind",
    "ClientClock",
    "ClientShare",
    "EngineBinary",
    "EngineLocation",
    "Exchange",
    "Extraction",
    "Fingerprint",
    "Frozen",
    "GibberishFinding",
    "GibberishKind",
    "GibberishSeverity",
    "GpuProcess",
    "GradeResult",
    "HostConditions",
    "HostInfo",
    "Input",
    "LoadMode",
    "LoadRequest",
    "LoadWindow",
    "MMLUProAnswer",
    "MMLUProConfig",
    "MemoryBandwidth",
    "ModelInfo",
    "OutputScreen",
    "PackAnswer",
    "PackConfig",
    "Phase",
    "PreflightFinding",
    "PreflightReport",
    "PreflightSeverity",
    "ProbeRecord",
    "ProbeVerdict",
    "ReasoningForm",
    "Record",
    "RequestError",
    "RequestErrorKind",
    "RetryAttempt",
    "SanityAnswer",
    "SanityVerdict",
    "ScenarioPrefixCache",
    "SelfCheck",
    "ServingCommand",
    "SloTargets",
    "Speculation",
    "SpeedBatch",
    "SpeedRequest",
    "SpeedSkip",
    "StartupTiming",
    "StreamResult",
    "TaskStopReason",
    "TaskTrialRecord",
    "TelemetryRecord",
    "TelemetrySample",
    "TokenSplitMethod",
    "ToolTrialRecord",
    "TrafficCheck",
    "TurnObservation",
    "older_fingerprint",
    "record_adapter",
    "send_lag_ns",
]
