"""`rigbench run`'s rig flags, typed: what an engine that `rigbench run --engine` launches reads them from.

Engine-neutral: each such engine turns them into its own spec in its package (`_run_flags.py` there),
and `rigbench.rig`'s `rig_from_flags` picks the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from rigbench.errors import UsageError
from rigbench.records import Frozen

__all__ = ["RigFlags"]


class RigFlags(Frozen):
    """The rig part of `rigbench run`'s options, by the option's name (None: not given)."""

    endpoint: str | None = None
    model: str | None = None
    engine: str | None = None  # None: the embedded rig
    model_file: str | None = None
    llama_server: str | None = None
    draft_model: str | None = None
    spec_type: str | None = None
    draft_max: int | None = None
    spec_synth_len: float | None = None
    ctx_per_slot: int | None = None
    threads: int | None = None
    port: int | None = None
    engine_arg: list[str] = Field(default_factory=list)
    vllm_python: str | None = None
    kv_cache_gib: float | None = None

    @field_validator("llama_server", "vllm_python", mode="before")
    @classmethod
    def _path(cls, v: Any) -> Any:
        return str(v) if isinstance(v, Path) else v

    @field_validator("engine_arg", mode="before")
    @classmethod
    def _none(cls, v: Any) -> Any:
        return list(v or [])

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> RigFlags:
        """The rig flags among all of `rigbench run`'s options."""
        try:
            return cls.model_validate({k: options.get(k) for k in cls.model_fields})
        except ValidationError as e:  # typer has typed them already; a hand-edited run.json may not have
            err = e.errors()[0]
            raise UsageError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}; got {err['input']!r}.") from None
