"""`rigbench run`'s rig flags, typed, and the rig spec they make (the one place that reads them).

The flags name an engine to launch (the embedded llama.cpp rig by default, or vLLM) or an endpoint
to attach to; they become the same rig section a plan file writes (`embedded:`, `launch:`,
`endpoint:`), validated by the plan's models. A launch from flags is sized for the run's speed shapes
and concurrency (`size_flag_rig`), as the embedded rig sizes itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from rigbench.errors import UsageError
from rigbench.records import Frozen
from rigbench.rig._launch_spec import EndpointSpec
from rigbench.rig.engines._vllm import VLLMLaunch
from rigbench.rig.engines._vllm._env import find_vllm, vllm_serve_argv
from rigbench.sizing import context_per_slot, slots_for

__all__ = ["RigFlags", "check_rig_flags", "rig_from_flags", "size_flag_rig"]

# vLLM on a CPU: its KV pool is small (1 GiB by default), so a tighter floor.
_VLLM_FLOOR, _VLLM_UNKNOWN_NEED = 2048, 1792

# the engines `rigbench run --engine` launches; any other is started by the user (--endpoint) or a plan
_FLAG_ENGINES = ("llamacpp", "llama.cpp", "vllm")


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


def check_rig_flags(f: RigFlags) -> None:
    """Flags that cannot go together, and an engine `rigbench run` does not launch."""
    if f.endpoint and (f.model_file or f.llama_server or f.draft_model):
        raise UsageError("--endpoint attaches to a running server; --model-file/--llama-server/--draft-model "
                         "only apply when rigbench launches the server. Use one or the other.")
    engine = f.engine or "llamacpp"
    if engine not in _FLAG_ENGINES:
        raise UsageError(f"--engine {engine!r}: rigbench launches llamacpp or vllm. For SGLang or Ollama, start the "
                         "server yourself and attach with --endpoint, or use a plan rig (docs/plans.md).")


def rig_from_flags(f: RigFlags) -> dict[str, Any]:
    """The plan rig section the flags make: `launch:` (vLLM), `endpoint:`, or `embedded:` (llama.cpp)."""
    check_rig_flags(f)
    if f.engine == "vllm" and not f.endpoint:
        return {"launch": _vllm_launch(f)}
    if f.vllm_python or f.kv_cache_gib:
        raise UsageError("--vllm-python and --kv-cache-gib apply to --engine vllm only.")
    if f.endpoint:
        return {"endpoint": EndpointSpec(base_url=f.endpoint, model=f.model)}
    given = {"model": f.model_file, "draft_model": f.draft_model, "spec_type": f.spec_type,
             "draft_max": f.draft_max, "spec_synth_len": f.spec_synth_len, "ctx_per_slot": f.ctx_per_slot,
             "threads": f.threads, "port": f.port, "llama_server": f.llama_server}
    return {"embedded": {**{k: v for k, v in given.items() if v is not None}, "extra_args": list(f.engine_arg)}}


def size_flag_rig(spec: Any, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> Any:
    """A vLLM launch from flags, sized for the validated speed settings as the embedded rig is; any
    other spec as it is."""
    if not isinstance(spec, VLLMLaunch):
        return spec
    return spec.model_copy(update={
        "max_model_len": spec.max_model_len or context_per_slot(shapes, floor=_VLLM_FLOOR,
                                                                unknown_need=_VLLM_UNKNOWN_NEED),
        "max_num_seqs": slots_for(concurrency)})


def _vllm_launch(f: RigFlags) -> VLLMLaunch:
    """`rigbench run --engine vllm`: the VLLMLaunch spec (model converted and vLLM found when it starts)."""
    for flag, value in (("--llama-server", f.llama_server), ("--draft-model", f.draft_model),
                        ("--spec-synth-len", f.spec_synth_len), ("--threads", f.threads)):
        if value is not None:
            raise UsageError(f"{flag} is a llama.cpp option; with --engine vllm use --spec-type ngram "
                             "[--draft-max N], or pass vLLM flags with --engine-arg.")
    spec_type, draft_max = f.spec_type, f.draft_max
    spec_cfg = None
    if spec_type is not None:
        if spec_type != "ngram":
            raise UsageError(f"--spec-type {spec_type!r} with --engine vllm: rigbench builds vLLM's ngram "
                             "speculation only (--spec-type ngram). For a draft model or EAGLE, pass "
                             "--engine-arg=--speculative-config='{...}' or use a plan rig.")
        spec_cfg = {"method": "ngram", "num_speculative_tokens": draft_max or 4,
                    "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    elif draft_max is not None:
        raise UsageError("--draft-max needs --spec-type ngram with --engine vllm.")
    model = "embedded"
    model_file = f.model_file
    if model_file:
        p = Path(model_file).expanduser()
        if model_file.startswith(("hf://", "pypi://")):
            raise UsageError(f"--model-file {model_file!r} with --engine vllm: give a local .gguf or a Hugging Face "
                             "model directory (or a hub id vLLM can fetch itself).")
        if p.exists():
            if p.is_dir() and not (p / "config.json").is_file():
                raise UsageError(f"--model-file {p} is a directory without config.json: vLLM needs a Hugging Face "
                                 "model directory (config.json, weights, tokenizer) or a .gguf file.")
            model = str(p.resolve())
        elif model_file.endswith(".gguf") or "/" not in model_file or model_file.startswith((".", "/", "~")):
            raise UsageError(f"--model-file {model_file}: no such file or directory.")
        else:
            model = model_file  # a hub id, e.g. HuggingFaceTB/SmolLM2-135M-Instruct
    executable = None
    vllm_python = f.vllm_python
    if vllm_python is not None:
        found = find_vllm(Path(vllm_python))  # checks that it imports vllm; errors name the fix
        assert found is not None
        executable = vllm_serve_argv(found.python)
    return VLLMLaunch(model=model, port=f.port, executable=executable, dtype="bfloat16",
                      max_model_len=f.ctx_per_slot, generation_config="auto",
                      speculative_config=spec_cfg, cpu_kvcache_space_gib=f.kv_cache_gib or 1.0,
                      extra_args=list(f.engine_arg))
