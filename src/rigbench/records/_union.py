"""Every record kind a run's records file holds, as one union discriminated by `kind`."""

from __future__ import annotations

from typing import Annotated, get_args

from pydantic import Field, TypeAdapter

from rigbench.records._agent import BFCLItemRecord, ProbeRecord, TaskTrialRecord, ToolTrialRecord
from rigbench.records._base import Record
from rigbench.records._clients import ClientClock, ClientShare
from rigbench.records._gibberish import OutputScreen
from rigbench.records._host import HostConditions
from rigbench.records._load import LoadRequest, LoadWindow
from rigbench.records._preflight import PreflightReport
from rigbench.records._quality import MMLUProAnswer, MMLUProConfig, PackAnswer, PackConfig
from rigbench.records._sanity import SanityVerdict
from rigbench.records._selfcheck import SelfCheck
from rigbench.records._speed import SpeedBatch, SpeedRequest, SpeedSkip
from rigbench.records._startup import StartupTiming
from rigbench.records._telemetry import TelemetryRecord
from rigbench.records._traffic import TrafficCheck

__all__ = ["RECORD_TYPES", "AnyRecord", "record_adapter"]

AnyRecord = Annotated[
    StartupTiming
    | PreflightReport
    | SanityVerdict
    | SpeedRequest
    | SpeedBatch
    | SpeedSkip
    | TelemetryRecord
    | SelfCheck
    | TrafficCheck
    | OutputScreen
    | MMLUProConfig
    | MMLUProAnswer
    | PackConfig
    | PackAnswer
    | ProbeRecord
    | ToolTrialRecord
    | BFCLItemRecord
    | TaskTrialRecord
    | ClientShare
    | ClientClock
    | HostConditions
    | LoadRequest
    | LoadWindow,
    Field(discriminator="kind"),
]


# kind -> model, read off the union so the two cannot drift apart
RECORD_TYPES: dict[str, type[Record]] = {
    str(m.model_fields["kind"].default): m for m in get_args(get_args(AnyRecord)[0])
}

record_adapter: TypeAdapter[AnyRecord] = TypeAdapter(AnyRecord)
