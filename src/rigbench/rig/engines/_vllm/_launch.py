"""vLLM's typed launch spec and its `vllm serve` command line."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal, Self

from rigbench.rig._spec import EngineSpec, LaunchCommand, finish_argv, opt
from rigbench.rig.engines._vllm._versions import PROMPT_TOKENS_DETAILS_SINCE, version_at_least
from rigbench.sizing import context_per_slot, slots_for

__all__ = ["DEFAULT_PORT", "START_TIMEOUT_S", "VLLM_API_SERVER_MODULE", "VLLMLaunch", "vllm_command",
           "with_cached_token_counts"]

START_TIMEOUT_S = 1800.0  # a cold torch.compile on a CPU takes minutes
DEFAULT_PORT = 8000


class VLLMLaunch(EngineSpec):
    """`vllm serve MODEL ...`

    `model` is a Hugging Face id or directory, a .gguf (converted once to a bf16 directory), or
    "embedded" (the bundled SmolLM2-135M, converted). With no `executable`, the launched rig finds
    vLLM (`vllm` on PATH or importable) or installs the managed CPU venv (`_env.py` beside this module).
    """

    kind: Literal["vllm"] = "vllm"
    model: str
    served_model_name: str | None = None
    tensor_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    # --speculative-config JSON, e.g. {"method": "eagle3", "model": "...", "num_speculative_tokens": 4}
    speculative_config: dict[str, Any] | None = None
    tool_call_parser: str | None = None  # also turns on --enable-auto-tool-choice
    reasoning_parser: str | None = None
    generation_config: str | None = None  # "auto" | "vllm" | a folder
    dtype: str | None = None  # --dtype (CPU: bfloat16)
    enforce_eager: bool = False  # --enforce-eager: no torch.compile (faster start, slower decode)
    cpu_kvcache_space_gib: float | None = None  # VLLM_CPU_KVCACHE_SPACE: the KV pool on a CPU build

    @property
    def served_name(self) -> str | None:
        return self.served_model_name

    def sized_for_run(self, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> Self:
        """Context and sequences for the validated speed settings, as the embedded rig sizes itself."""
        return self.model_copy(update={
            "max_model_len": self.max_model_len or context_per_slot(shapes, floor=_FLOOR, unknown_need=_UNKNOWN_NEED),
            "max_num_seqs": slots_for(concurrency)})


# vLLM on a CPU: its KV pool is small (1 GiB by default), so a tighter floor.
_FLOOR, _UNKNOWN_NEED = 2048, 1792

VLLM_API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def vllm_command(s: VLLMLaunch) -> LaunchCommand:
    exe = s.executable or ["vllm", "serve"]
    # `vllm serve` takes the model as its first argument; the api_server module only as --model
    model = ["--model", s.model] if exe[-1] == VLLM_API_SERVER_MODULE else [s.model]
    argv = [*exe, *model, "--host", s.host, "--port", str(s.port or DEFAULT_PORT)]
    opt(argv, "--served-model-name", s.served_model_name)
    opt(argv, "--tensor-parallel-size", s.tensor_parallel_size)
    opt(argv, "--max-model-len", s.max_model_len)
    opt(argv, "--gpu-memory-utilization", s.gpu_memory_utilization)
    opt(argv, "--max-num-seqs", s.max_num_seqs)
    opt(argv, "--max-num-batched-tokens", s.max_num_batched_tokens)
    if s.speculative_config is not None:
        spec_json = json.dumps(s.speculative_config, sort_keys=True, separators=(",", ":"))
        argv += ["--speculative-config", spec_json]
    if s.tool_call_parser is not None:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", s.tool_call_parser]
    opt(argv, "--reasoning-parser", s.reasoning_parser)
    opt(argv, "--generation-config", s.generation_config)
    opt(argv, "--dtype", s.dtype)
    if s.enforce_eager:
        argv.append("--enforce-eager")
    env = {} if s.cpu_kvcache_space_gib is None else {"VLLM_CPU_KVCACHE_SPACE": f"{s.cpu_kvcache_space_gib:g}"}
    return LaunchCommand(finish_argv("vllm", s, argv), env)


PROMPT_TOKENS_DETAILS = "--enable-prompt-tokens-details"


def with_cached_token_counts(spec: VLLMLaunch, version: str | None) -> tuple[VLLMLaunch, str]:
    """`spec` with --enable-prompt-tokens-details added to its extra_args where the vLLM that runs it (of
    `version`) then reports each request's cached prompt tokens (usage.prompt_tokens_details.cached_tokens,
    which the prefix-cache check of load windows reads: they have no /metrics fallback), and what was done.
    A spec whose extra_args already set the flag, either way, is taken as written: never a repeated flag."""
    given = {a.split("=", 1)[0] for a in spec.extra_args}
    if given & {PROMPT_TOKENS_DETAILS, "--no-enable-prompt-tokens-details"}:
        return spec, f"{PROMPT_TOKENS_DETAILS}: as extra_args set it"
    if not version_at_least(version, PROMPT_TOKENS_DETAILS_SINCE):
        floor = ".".join(map(str, PROMPT_TOKENS_DETAILS_SINCE))
        return spec, (f"{PROMPT_TOKENS_DETAILS} not added: vLLM {version or '(version unknown)'} is not known to "
                      f"report cached prompt tokens with it ({floor}+ does); the prefix-cache check of load windows "
                      "will say the server does not report them. Add it to extra_args if this vLLM has it.")
    return spec.model_copy(update={"extra_args": [*spec.extra_args, PROMPT_TOKENS_DETAILS]}), \
        f"{PROMPT_TOKENS_DETAILS} added (vLLM {version}: per-request cached prompt tokens)"
