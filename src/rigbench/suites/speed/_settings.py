"""The speed suite's settings: one typed model from `rigbench run`'s flags or a plan's `speed:` key.

`concurrency` keeps one form, a list of positive levels, from the flag (`--concurrency 1,2,4`
is parsed by the same validator as a plan's `[1, 2, 4]`) to the client's connection pool
(`highest`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rigbench.errors import UsageError
from rigbench.records import Input
from rigbench.suites.speed._scenarios import PROFILES, Scenario, scenarios_for

__all__ = ["ConcurrencyLevels", "SpeedSettings"]


def _levels_from_text(v: Any) -> Any:
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    if isinstance(v, str):
        try:
            # an empty item (`1,,2`, `4,`) is a typo, not a level to skip
            return [int(x) for x in v.split(",")] if v.strip() else []
        except ValueError:
            raise ValueError(f"takes comma-separated integers, e.g. 1,2,4,8; got {v!r}") from None
    return v


def _levels_positive(v: list[int]) -> list[int]:
    if not v:
        raise ValueError("needs at least one level, e.g. 1 or 1,2,4")
    if any(c < 1 for c in v):
        raise ValueError(f"concurrency levels must be positive integers; got {v}")
    return v


# Concurrent requests per batch, one entry per level measured.
ConcurrencyLevels = Annotated[list[int], BeforeValidator(_levels_from_text), AfterValidator(_levels_positive)]


# Requests one run may plan (`--max-requests`, plan key speed.max_requests): far above any real run
# (the full profile at 5 repetitions, levels 1..64, is under 2,000), low enough that a typo such as
# `--repetitions 99999999999999999999999` is refused before anything starts.
MAX_REQUESTS = 1_000_000


class SpeedSettings(Input):
    """Settings of `--suite speed` (plan key `speed`); defaults are `rigbench run`'s."""

    profile: str = "quick"  # quick (shrunk shapes for small CPU rigs) or full (the seed's shapes)
    scenarios: list[str] | None = None  # None: every scenario of the profile
    repetitions: int = Field(default=5, ge=1)
    warmup: int = Field(default=1, ge=0)
    concurrency: ConcurrencyLevels = Field(default_factory=lambda: [1])
    temperature: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)
    max_requests: int = Field(default=MAX_REQUESTS, ge=1, validate_default=True)  # a bound, not recorded

    @field_validator("max_requests")
    @classmethod
    def _bounded(cls, v: int, info: ValidationInfo) -> int:
        d = info.data
        if not {"profile", "scenarios", "repetitions", "warmup", "concurrency"} <= set(d):
            return v  # another field is wrong: that is the error to show
        try:
            n_shapes = len(scenarios_for(d["profile"], d["scenarios"]))
        except UsageError:
            return v
        planned = n_shapes * (d["warmup"] + d["repetitions"]) * sum(d["concurrency"])
        if planned > v:
            raise ValueError(
                f"this plan sends {planned:,} requests ({n_shapes} scenario(s) x {d['warmup'] + d['repetitions']:,} "
                f"batches (warm-up + repetitions) x {sum(d['concurrency']):,} requests per set of levels), more than "
                f"the {v:,} allowed. Lower --repetitions or --concurrency, or raise --max-requests if you mean it")
        return v

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, v: str) -> str:
        if v not in PROFILES:
            raise ValueError(f"unknown speed profile {v!r}; choose one of {', '.join(PROFILES)}.")
        return v

    @model_validator(mode="after")
    def _known_scenarios(self) -> SpeedSettings:
        try:
            scenarios_for(self.profile, self.scenarios)
        except UsageError as e:
            raise ValueError(str(e)) from None
        return self

    @property
    def planned_requests(self) -> int:
        """Requests the suite sends (warm-up included), before any is skipped or resumed."""
        return len(self.shapes) * (self.warmup + self.repetitions) * sum(self.concurrency)

    @property
    def shapes(self) -> list[Scenario]:
        """The scenarios to measure, with their token shapes."""
        return scenarios_for(self.profile, self.scenarios)

    @property
    def highest_concurrency(self) -> int:
        return max(self.concurrency)

    def as_dict(self) -> dict[str, Any]:
        """The form recorded in run.json (`plan.suites.speed`): scenarios with their shapes."""
        return {
            "profile": self.profile,
            "scenarios": {s.name: {"input_tokens": s.input_tokens, "output_tokens": s.output_tokens}
                          for s in self.shapes},
            "repetitions": self.repetitions,
            "warmup": self.warmup,
            "concurrency": list(self.concurrency),
            "temperature": self.temperature,
        }
