"""vLLM (`vllm serve`): facts read from vLLM's source and docs, tested against recorded responses."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any, Literal

from rigbench.client import ChatClient
from rigbench.rig.engines._http import get_json, post_json, probe_json, require_json
from rigbench.rig.engines._reasoning import template_reasoning_fields
from rigbench.rig.engines._spec import EngineSpec, LaunchCommand, finish_argv, opt

__all__ = ["VLLM", "VLLM_API_SERVER_MODULE", "VLLMAdapter", "VLLMEngine", "VLLMLaunch", "vllm_command"]

_METRICS = {
    "kv_cache_usage_ratio": "vllm:kv_cache_usage_perc",  # a 0..1 ratio despite the name
    "requests_running": "vllm:num_requests_running",
    "requests_waiting": "vllm:num_requests_waiting",
    "prompt_tokens_total": "vllm:prompt_tokens_total",
    "generation_tokens_total": "vllm:generation_tokens_total",
    "spec_draft_tokens_total": "vllm:spec_decode_num_draft_tokens_total",
    "spec_accepted_tokens_total": "vllm:spec_decode_num_accepted_tokens_total",
    "spec_drafts_total": "vllm:spec_decode_num_drafts_total",
}
# Before the rename (V0 and early V1) the KV gauge was GPU-only and named this.
_FALLBACKS = {"kv_cache_usage_ratio": "vllm:gpu_cache_usage_perc"}


class VLLMAdapter:
    name = "vllm"
    health_path = "/health"  # empty 200 when the engine is up, 503 if the engine died
    metrics_path: str | None = "/metrics"  # always on
    forced_length_exact = True

    def __init__(self) -> None:
        self.metric_names: dict[str, str] = dict(_METRICS)
        self.metric_fallbacks: dict[str, str] = dict(_FALLBACKS)

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        url = client.server_root + "/version"
        status, version = await get_json(client, "/version")
        version = require_json(status, version, engine="vLLM", what="reading /version", url=url,
                               key="version")
        models = await probe_json(client, "/v1/models")
        data = models.get("data") if isinstance(models, dict) else None
        first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
        raw: dict[str, Any] = {"version": version, "models": models}
        # Only served with VLLM_SERVER_DEV_MODE=1; it holds the full engine config when present.
        dev_info = await probe_json(client, "/server_info")
        if dev_info is not None:
            raw["server_info"] = dev_info
        return {
            "engine": self.name,
            "version": version["version"],
            "model": first.get("id"),
            "context_length": first.get("max_model_len"),
            "slots": None,  # max_num_seqs is not exposed outside dev mode
            "raw": raw,
        }

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        url = client.server_root + "/tokenize"
        status, body = await post_json(client, "/tokenize", {"prompt": text, "add_special_tokens": False})
        body = require_json(status, body, engine="vLLM", what="tokenizing", url=url, key="tokens")
        return [int(t) for t in body["tokens"]]

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None:
        url = client.server_root + "/detokenize"
        status, body = await post_json(client, "/detokenize", {"tokens": tokens})
        body = require_json(status, body, engine="vLLM", what="detokenizing", url=url, key="prompt")
        return str(body["prompt"])

    async def count_chat_tokens(
        self, client: ChatClient, model: str, messages: list[dict[str, Any]]
    ) -> int | None:
        # The messages form renders the served chat template exactly as the chat path does.
        url = client.server_root + "/tokenize"
        status, body = await post_json(client, "/tokenize", {"model": model, "messages": messages,
                                                             "add_generation_prompt": True})
        body = require_json(status, body, engine="vLLM", what="counting chat tokens", url=url, key="count")
        return int(body["count"])

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        return {"max_tokens": max_tokens, "min_tokens": max_tokens, "ignore_eos": True}

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        return template_reasoning_fields(effort)


DEFAULT_PORT = 8000


class VLLMLaunch(EngineSpec):
    """`vllm serve MODEL ...`

    `model` is a Hugging Face id or directory, a .gguf (converted once to a bf16 directory), or
    "embedded" (the bundled SmolLM2-135M, converted). With no `executable`, the launched rig finds
    vLLM (`vllm` on PATH or importable) or installs the managed CPU venv (rig/_vllm_env.py).
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


class VLLMEngine:
    name = "vllm"
    aliases: tuple[str, ...] = ()
    launch_spec = VLLMLaunch
    default_port = DEFAULT_PORT
    start_timeout_s = 1800.0  # a cold torch.compile on a CPU takes minutes
    speculative_flags = MappingProxyType({"--speculative-config": "config"})

    def adapter(self) -> VLLMAdapter:
        return VLLMAdapter()

    def command(self, spec: VLLMLaunch) -> LaunchCommand:
        return vllm_command(spec)

    def crash_hint(self, exit_code: int | None, log_text: str) -> str:
        return ""


VLLM = VLLMEngine()
