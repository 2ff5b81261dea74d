"""vLLM (`vllm serve`): facts read from vLLM's source and docs, tested against recorded responses."""

from __future__ import annotations

from typing import Any

from rigbench.client import ChatClient
from rigbench.rig.engines._http import get_json, post_json, probe_json, require_json
from rigbench.rig.engines._reasoning import template_reasoning_fields

__all__ = ["VLLMAdapter"]

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

