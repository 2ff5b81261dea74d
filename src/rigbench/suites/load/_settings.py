"""The load suite's settings: `rigbench run --rate/--sweep ...` or a plan's `load:` key."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from rigbench.analysis import parse_slo
from rigbench.inputs import number
from rigbench.records import Input, SloTargets
from rigbench.suites.load._lengths import LengthDist
from rigbench.suites.load._schedule import MAX_SCHEDULED
from rigbench.suites.load._trace import read_trace

__all__ = ["LoadSettings"]

# A rate beyond any client (one process sends about 10^3-10^4 requests a second; Ray actors, 4,000 measured).
MAX_RATE_RPS = 1_000_000
# Requests per window when neither a count nor a duration is given.
DEFAULT_REQUESTS = 32


class LoadSettings(Input):
    """Settings of the load suite (plan key `load`); defaults are `rigbench run`'s."""

    rate_rps: float | None = None  # offered requests per second (open loop); None with a sweep
    arrival: Literal["constant", "poisson", "gamma"] = "poisson"
    burstiness: float = 1.0  # gamma shape: 1 is Poisson, below 1 burstier, above 1 more regular
    duration_s: float | None = None  # a window offers load for this long...
    requests: int | None = Field(default=None, ge=1)  # ...or sends this many requests (default 32)
    max_concurrency: int | None = Field(default=None, ge=1)  # requests in flight at most (later ones wait)
    sweep: bool = False  # find saturation, then measure `sweep_points` rates below it
    sweep_points: int = Field(default=5, ge=1, le=50)
    slo: SloTargets | None = None  # goodput targets, e.g. "ttft=500ms,itl=50ms,e2e=10s"
    slo_attainment: float = 0.99  # the knee: the highest rate where at least this fraction met the SLO
    # rendered prompt tokens (chat template included) and forced output tokens: a count or a distribution
    input_tokens: LengthDist = Field(default_factory=lambda: LengthDist(mean=128))
    output_tokens: LengthDist = Field(default_factory=lambda: LengthDist(mean=64))
    trace: str | None = None  # replay this trace's arrivals and lengths (JSONL or CSV; suites/load/_trace.py)
    sessions: int | None = Field(default=None, ge=1)  # multi-turn sessions, starting at `rate_rps`...
    turns: int = Field(default=2, ge=1, le=64)  # ...each this many turns (history + a new user message)
    temperature: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)

    @field_validator("rate_rps", "duration_s", mode="before")
    @classmethod
    def _positive_finite(cls, v: Any, info: ValidationInfo) -> Any:
        if v is None:
            return v
        x = number(v)
        if not math.isfinite(x) or x <= 0:
            raise ValueError(f"must be a positive finite number; got {v!r}")
        if info.field_name == "rate_rps" and x > MAX_RATE_RPS:
            raise ValueError(f"at most {MAX_RATE_RPS:,} requests per second (beyond what any client sends); got {v!r}")
        return x

    @field_validator("burstiness", mode="before")
    @classmethod
    def _positive_shape(cls, v: Any) -> Any:
        x = number(v, "a number (the gamma shape)")
        if not math.isfinite(x) or x <= 0:
            raise ValueError(f"the gamma shape must be a positive finite number (1 is Poisson); got {v!r}")
        return x

    @field_validator("slo_attainment", mode="before")
    @classmethod
    def _fraction(cls, v: Any) -> Any:
        x = number(v, "a fraction such as 0.99")
        if not (0 < x <= 1):
            raise ValueError(f"must be a fraction in (0, 1], e.g. 0.99; got {v!r}")
        return x

    @field_validator("slo", mode="before")
    @classmethod
    def _slo_text(cls, v: Any) -> Any:
        return parse_slo(v) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _consistent(self) -> LoadSettings:
        if self.sessions is not None and (self.rate_rps is None or self.duration_s is not None
                                          or self.requests is not None or self.trace is not None):
            raise ValueError("--sessions N starts N sessions at --rate R (one window): give --rate, and no --sweep, "
                             "--trace, --duration or --requests")
        if self.trace is not None:
            if self.sweep or self.rate_rps is not None or self.duration_s is not None:
                raise ValueError("--trace replays the trace's own arrival times: drop --rate, --sweep and --duration")
            read_trace(self.trace, self.requests)  # a bad file is refused now, naming its line
        if self.sweep and self.rate_rps is not None:
            raise ValueError("a sweep picks its own rates (from the saturation it finds): give --sweep or "
                             "--rate, not both")
        if self.duration_s is not None and self.requests is not None:
            raise ValueError("bound a window by --duration or by --requests, not both")
        if self.arrival != "gamma" and self.burstiness != 1.0:
            raise ValueError(f"--burstiness {self.burstiness:g} shapes gamma arrivals; add --arrival gamma "
                             "(Poisson is gamma with burstiness 1)")
        if self.rate_rps is not None and self.duration_s is not None and self.rate_rps * self.duration_s > MAX_SCHEDULED:
            raise ValueError(f"--rate {self.rate_rps:g} for --duration {self.duration_s:g} s schedules more than "
                             f"{MAX_SCHEDULED:,} requests; shorten the duration")
        return self

    def missing(self) -> str | None:
        """Why these settings offer no load (checked when the suite is built, not on defaults)."""
        if not self.sweep and self.rate_rps is None and self.trace is None:
            return ("the load suite needs a rate, a sweep or a trace: --rate R (requests per second), --sweep or "
                    "--trace FILE (plan: `load: {rate_rps: R}`, `load: {sweep: true}` or `load: {trace: FILE}`)")
        return None

    def schedule_s(self) -> tuple[float, str] | None:
        """The least time the arrival schedule takes, known before anything is sent, and how it was
        counted; None when only the server's speed will tell (a sweep bounded by request count)."""
        if self.trace is not None:
            _, reqs = read_trace(self.trace, self.requests)
            return reqs[-1].offset_s, f"the trace's {len(reqs):,} arrivals span {reqs[-1].offset_s:,.0f} s"
        if self.rate_rps is not None and self.sessions is not None:
            return ((self.sessions - 1) / self.rate_rps,
                    f"{self.sessions:,} sessions started at --rate {self.rate_rps:g}/s")
        if self.sweep:
            if self.duration_s is None:
                return None
            return (self.sweep_points * self.duration_s,
                    f"{self.sweep_points} sweep rates x --duration {self.duration_s:g} s")
        if self.rate_rps is None:
            return None
        if self.duration_s is not None:
            return self.duration_s, f"--duration {self.duration_s:g} s"
        n = self.count or 1
        return (n - 1) / self.rate_rps, f"{n:,} requests at --rate {self.rate_rps:g}/s"

    @property
    def count(self) -> int | None:
        """Requests per window when bounded by count (None: bounded by duration)."""
        if self.duration_s is not None:
            return None
        return self.requests if self.requests is not None else DEFAULT_REQUESTS

    def as_dict(self) -> dict[str, Any]:
        """The form recorded in run.json (`plan.suites.load`)."""
        return self.model_dump(mode="json")
