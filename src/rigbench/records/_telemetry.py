"""Raw server telemetry around one scenario: every Prometheus scrape, canonical names only."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rigbench.records._base import Frozen, Record

__all__ = ["Phase", "TelemetryRecord", "TelemetrySample"]

Phase = Literal["before", "during", "after"]


class TelemetrySample(Frozen):
    t_ns: int  # perf_counter_ns when the response arrived (same clock as StreamResult stamps)
    phase: Phase
    scrape_s: float  # how long the scrape took
    values: dict[str, float] = Field(default_factory=dict)  # canonical name -> value
    accepted_per_pos: dict[int, float] = Field(default_factory=dict)  # draft position -> accepted tokens (counter)
    error: str | None = None


class TelemetryRecord(Record):
    """Every scrape around one scenario at one concurrency."""

    kind: Literal["telemetry"] = "telemetry"
    unit_id: str  # "telemetry/<scenario>/c<concurrency>"
    scenario: str
    concurrency: int
    engine: str
    metrics_url: str
    interval_s: float
    samples: list[TelemetrySample] = Field(default_factory=list)
    metric_names: dict[str, str] = Field(default_factory=dict)  # canonical -> engine name, as used
    unavailable: str | None = None  # why there are no samples (endpoint off, 404...)
