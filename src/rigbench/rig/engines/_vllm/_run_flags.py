"""`rigbench run --engine vllm`: the vLLM launch spec its flags make (sized for the run by `VLLMLaunch.sized_for_run`)."""

from __future__ import annotations

from pathlib import Path

from rigbench.errors import UsageError
from rigbench.rig.engines._run_flags import RigFlags
from rigbench.rig.engines._vllm._env import find_vllm, vllm_serve_argv
from rigbench.rig.engines._vllm._launch import VLLMLaunch

__all__ = ["launch_from_run_flags"]

def launch_from_run_flags(f: RigFlags) -> VLLMLaunch:
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
