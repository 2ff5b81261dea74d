"""The load suite's settings: `rigbench run --rate/--sweep ...` or a plan's `load:` key."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rigbench.analysis import parse_slo
from rigbench.records import Frozen, SloTargets
from rigbench.suites.load._lengths import LengthDist
from rigbench.suites.load._schedule import MAX_SCHEDULED
from rigbench.suites.load._trace import read_trace

__all__ = ["LoadSettings"]

# How long a window offering one rate lasts when neither --duration nor --requests is given: long enough that
# the ramp at its start (until the first requests come back) and the drain after its last arrival, both left
# out of its figures (analysis/_load.py, steady state), leave most of it measured for a request of up to ~10 s.
DEFAULT_WINDOW_S = 30.0
# Requests of a sweep's saturation burst when --requests is not given.
DEFAULT_BURST = 64


def _positive_finite(v: Any) -> float:
    if isinstance(v, bool):  # YAML's `true` is no rate
        raise ValueError(f"takes a number; got {v!r}")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"takes a number; got {v!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"must be a positive finite number; got {x!r}")
    return x


class LoadSettings(Frozen):
    """Settings of the load suite (plan key `load`); defaults are `rigbench run`'s."""

    # offered requests per second (open loop): one rate, or several (one window each, in the order given); None
    # with a sweep. One rate stays a number (as runs recorded it before lists were taken).
    rate_rps: float | list[float] | None = None
    arrival: Literal["constant", "poisson", "gamma"] = "poisson"
    burstiness: float = 1.0  # gamma shape: 1 is Poisson, below 1 burstier, above 1 more regular
    duration_s: float | None = None  # a window offers load for this long (default DEFAULT_WINDOW_S)...
    requests: int | None = Field(default=None, ge=1)  # ...or sends this many requests
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

    @field_validator("rate_rps", mode="before")
    @classmethod
    def _rates(cls, v: Any) -> Any:
        """A number, or several: a list, or text such as `5,10,20` (as `--rate` takes them)."""
        if v is None:
            return v
        items = [x.strip() for x in v.split(",")] if isinstance(v, str) else v if isinstance(v, list | tuple) else [v]
        if not items or any(x == "" for x in items):
            raise ValueError(f"takes a rate or a comma-separated list of rates, e.g. 5 or 5,10,20; got {v!r}")
        rates = [_positive_finite(x) for x in items]
        if len(set(rates)) < len(rates):
            raise ValueError(f"lists a rate twice: {v!r}; each rate is one window")
        return rates[0] if len(rates) == 1 else rates

    @field_validator("duration_s", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        return None if v is None else _positive_finite(v)

    @field_validator("burstiness", mode="before")
    @classmethod
    def _positive_shape(cls, v: Any) -> Any:
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"takes a number (the gamma shape); got {v!r}") from None
        if not math.isfinite(x) or x <= 0:
            raise ValueError(f"the gamma shape must be a positive finite number (1 is Poisson); got {v!r}")
        return x

    @field_validator("slo_attainment", mode="before")
    @classmethod
    def _fraction(cls, v: Any) -> Any:
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"takes a fraction such as 0.99; got {v!r}") from None
        if not (0 < x <= 1):
            raise ValueError(f"must be a fraction in (0, 1], e.g. 0.99; got {v!r}")
        return x

    @field_validator("slo", mode="before")
    @classmethod
    def _slo_text(cls, v: Any) -> Any:
        return parse_slo(v) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _consistent(self) -> LoadSettings:
        if self.sessions is not None and (len(self.rates) != 1 or self.duration_s is not None
                                          or self.requests is not None or self.trace is not None):
            raise ValueError("--sessions N starts N sessions at --rate R (one window): give one --rate, and no "
                             "--sweep, --trace, --duration or --requests")
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
        window = self.window_duration_s
        if self.rates and window is not None and max(self.rates) * window > MAX_SCHEDULED:
            raise ValueError(f"--rate {max(self.rates):g} for --duration {window:g} s schedules more than "
                             f"{MAX_SCHEDULED:,} requests; shorten the duration")
        return self

    @property
    def rates(self) -> list[float]:
        """The offered rates, one window each ([] for a sweep, which picks its own, or a trace)."""
        if self.rate_rps is None:
            return []
        return list(self.rate_rps) if isinstance(self.rate_rps, list) else [self.rate_rps]

    def missing(self) -> str | None:
        """Why these settings offer no load (checked when the suite is built, not on defaults)."""
        if not self.sweep and not self.rates and self.trace is None:
            return ("the load suite needs a rate, a sweep or a trace: --rate R (requests per second), --sweep or "
                    "--trace FILE (plan: `load: {rate_rps: R}`, `load: {sweep: true}` or `load: {trace: FILE}`)")
        return None

    def schedule_s(self) -> tuple[float, str] | None:
        """The least time the arrival schedule takes, known before anything is sent, and how it was
        counted; None when only the server's speed will tell (a sweep bounded by request count)."""
        if self.trace is not None:
            _, reqs = read_trace(self.trace, self.requests)
            return reqs[-1].offset_s, f"the trace's {len(reqs):,} arrivals span {reqs[-1].offset_s:,.0f} s"
        rates = self.rates
        if rates and self.sessions is not None:
            return ((self.sessions - 1) / rates[0], f"{self.sessions:,} sessions started at --rate {rates[0]:g}/s")
        window = self.window_duration_s
        bound = (f"--duration {window:g} s" if self.duration_s is not None
                 else f"{window:g} s each (the default)" if window is not None else "")
        if self.sweep:
            if window is None:
                return None
            return self.sweep_points * window, f"{self.sweep_points} sweep rates x {bound}"
        if not rates:
            return None
        if window is not None:
            return window * len(rates), bound if len(rates) == 1 else f"{len(rates)} rates x {bound}"
        n = self.count or 1
        if len(rates) == 1:
            return (n - 1) / rates[0], f"{n:,} requests at --rate {rates[0]:g}/s"
        return sum((n - 1) / r for r in rates), f"{n:,} requests at each of {len(rates)} rates"

    @property
    def window_duration_s(self) -> float | None:
        """How long a window offering one rate lasts (None: bounded by a request count)."""
        if self.duration_s is not None:
            return self.duration_s
        return None if self.requests is not None else DEFAULT_WINDOW_S

    @property
    def count(self) -> int | None:
        """Requests per window when bounded by count (None: bounded by duration)."""
        return self.requests if self.duration_s is None else None

    def as_dict(self) -> dict[str, Any]:
        """The form recorded in run.json (`plan.suites.load`)."""
        return self.model_dump(mode="json")
