"""Plan file models: a matrix of rigs x suites x settings (format: docs/plans.md).

Everything is `extra="forbid"`: a misspelt key is an error naming its file and line, never a
setting silently ignored. A rig's `launch:` is checked against the engines registered when the plan
is validated (`rigbench.rig.LaunchSpec`), so an engine added with `register_engine` is a valid kind.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import Field, field_validator, model_validator

from rigbench.client import Deadlines, RetryPolicy
from rigbench.records import Input
from rigbench.rig import EmbeddedRig, EndpointSpec, LaunchSpec, RigSpec
from rigbench.suites import SuiteSettings
from rigbench.suites.speed import SpeedSettings

__all__ = ["EmbeddedRig", "Plan", "PlanRig", "RigResources", "SpeedPlan"]


class _Model(Input):
    """The base of the plan's models: a misspelt key is an error, not ignored."""


# The speed suite's own settings model is the plan's `speed:` section (one model, one validation).
SpeedPlan = SpeedSettings


# Ray's own resource names: set through `cpus` / `gpus`, never under `custom`.
_RAY_BUILTIN_RESOURCES = {"CPU", "GPU", "memory", "object_store_memory"}


class RigResources(_Model):
    """Where a rig may run under `rigbench run PLAN --ray` (docs/scale-out.md); ignored without --ray."""

    gpus: float = Field(default=0, ge=0)  # Ray `num_gpus`: the task sees only these (CUDA_VISIBLE_DEVICES)
    cpus: float = Field(default=1, ge=0)  # Ray `num_cpus`
    custom: dict[str, float] = Field(default_factory=dict)  # custom node resources, e.g. {"H200": 1}
    labels: dict[str, str] = Field(default_factory=dict)  # node labels the node must carry (`ray start --labels`)

    @field_validator("custom")
    @classmethod
    def _custom(cls, v: dict[str, float]) -> dict[str, float]:
        for name, amount in v.items():
            if not name.strip():
                raise ValueError("a custom resource needs a non-empty name")
            if name in _RAY_BUILTIN_RESOURCES:
                raise ValueError(f"{name!r} is one of Ray's own resources: set it with `cpus:`/`gpus:` "
                                 "(memory is not reserved by rigbench)")
            if amount <= 0:
                raise ValueError(f"custom resource {name!r} must ask for a positive amount; got {amount}")
        return v

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        for k, val in v.items():
            if not k.strip() or not str(val).strip():
                raise ValueError(f"node labels need a non-empty key and value; got {k!r}: {val!r}")
        return v


class PlanRig(_Model):
    """One rig: exactly one of `embedded`, `launch` or `endpoint`; `sweep` expands it into several."""

    name: str = Field(min_length=1, max_length=60)
    embedded: EmbeddedRig | None = None
    launch: LaunchSpec | None = None
    endpoint: EndpointSpec | None = None
    api_key_env: str | None = None  # environment variable holding the endpoint's API key
    suites: list[str] | None = None  # None: the plan's suites
    # field of the rig's config -> values; the rig expands into the product of them
    sweep: dict[str, list[Any]] = Field(default_factory=dict)
    resources: RigResources | None = None  # placement under --ray; every rig a sweep makes asks the same

    @model_validator(mode="after")
    def _exactly_one(self) -> PlanRig:
        given = [k for k in ("embedded", "launch", "endpoint") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"rig {self.name!r} needs exactly one of embedded, launch or endpoint "
                             f"(got {', '.join(given) or 'none'})")
        if isinstance(self.launch, EndpointSpec):
            raise ValueError("an already-running server goes under `endpoint:`, not `launch:`")
        for key, values in self.sweep.items():
            if not values:
                raise ValueError(f"sweep {key!r} has no values")
        return self

    @property
    def spec(self) -> RigSpec:
        spec = self.embedded or self.launch or self.endpoint
        assert spec is not None  # the validator guarantees one
        return cast(RigSpec, spec)  # LaunchSpec holds an engine's spec or a command (its validator's check)


class _PlanHead(_Model):
    name: str = Field(min_length=1, max_length=60)
    description: str | None = None
    suites: list[str] = Field(default_factory=lambda: ["speed"], min_length=1)


class Plan(SuiteSettings, _PlanHead):
    """A plan file: its head, then one section per registered suite (the fields of `SuiteSettings`, whose
    keys are the suites' spec keys: suites/_registry.py), then the run's own settings and the rigs."""

    seed: int = 0
    sanity: bool = True  # false: skip the known-answer gate (every run is then untrusted)
    sanity_max_tokens: int = Field(default=1024, ge=8)  # token budget per known-answer question
    sanity_seed: int | None = None  # the gate's question seed (None: a fresh one per run, recorded)
    bandwidth_gb_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)  # for the decode roofline
    allow_unconfined: bool = False  # run model-written code where bubblewrap cannot confine it (marked)
    allow_busy_host: bool = False  # keep speed figures measured on a busy host trusted (the finding still shows)
    allow_long_run: bool = False  # run past a day (known schedule, or speed projected); never in the plan's hash
    # per-request deadlines (`rigbench run --idle-timeout/--request-timeout`); unset keys keep the defaults
    deadlines: Deadlines = Field(default_factory=Deadlines)
    # refusals sent again (`rigbench run --retry-on/--max-retries/--max-retry-wait`); default: none
    retries: RetryPolicy = Field(default_factory=RetryPolicy)
    rigs: list[PlanRig] = Field(min_length=1)

    @field_validator("deadlines", mode="before")
    @classmethod
    def _null_deadlines(cls, v: Any) -> Any:
        return {} if v is None else v  # `deadlines: null` meant the defaults before they had a model

    def suite_settings(self) -> SuiteSettings:
        """Every suite's settings, with `allow_unconfined` given to the suites that run model code."""
        s = SuiteSettings(**{key: getattr(self, key) for key in SuiteSettings.model_fields})
        return s.unconfined() if self.allow_unconfined else s
