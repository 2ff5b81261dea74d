"""vLLM's adapter: its endpoints, metric names and request knobs, read from vLLM's source and tested against
recorded responses and a live server."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from rigbench.client import ChatClient
from rigbench.rig._http import fetch_json, probe_json, probe_text
from rigbench.rig.engines._base import BaseAdapter
from rigbench.rig.engines._reasoning import template_reasoning_fields
from rigbench.rig.engines._vllm._speculation import vllm_speculation

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
    # V1 counters, in tokens (`vllm/v1/metrics/loggers.py`: `Counter(name="vllm:prefix_cache_queries")`,
    # `_total` added on the wire): prompt tokens looked up, and of those found in the prefix cache.
    "prefix_cache_queries_total": "vllm:prefix_cache_queries_total",
    "prefix_cache_hits_total": "vllm:prefix_cache_hits_total",
}
# Before the rename (V0 and early V1) the KV gauge was GPU-only and named this; the prefix-cache
# counters were first named `vllm:gpu_prefix_cache_*` (later kept as deprecated aliases of these).
_FALLBACKS = {"kv_cache_usage_ratio": "vllm:gpu_cache_usage_perc",
              "prefix_cache_queries_total": "vllm:gpu_prefix_cache_queries_total",
              "prefix_cache_hits_total": "vllm:gpu_prefix_cache_hits_total"}


class VLLMAdapter(BaseAdapter):
    name = "vllm"
    health_path = "/health"  # empty 200 when the engine is up, 503 if the engine died
    metrics_path: str | None = "/metrics"  # always on
    metrics = MappingProxyType(_METRICS)
    fallbacks = MappingProxyType(_FALLBACKS)
    forced_length_exact = True
    # vllm/v1/spec_decode/metrics.py (SpecDecodingProm, 0.10 line): a Counter, `_total` on the wire
    per_position_metric: str | None = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    tokenize_unidentified = True  # POST /tokenize {"prompt": ...}

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        version = await fetch_json(client, "/version", engine="vLLM", what="reading /version", key="version")
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
            "speculation": vllm_speculation(str(version["version"]), await probe_text(client, "/metrics"), dev_info),
            "raw": raw,
        }

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        body = await fetch_json(client, "/tokenize", {"prompt": text, "add_special_tokens": False}, engine="vLLM",
                                what="tokenizing", key="tokens")
        return [int(t) for t in body["tokens"]]

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None:
        body = await fetch_json(client, "/detokenize", {"tokens": tokens}, engine="vLLM", what="detokenizing",
                                key="prompt")
        return str(body["prompt"])

    async def count_chat_tokens(
        self, client: ChatClient, model: str, messages: list[dict[str, Any]]
    ) -> int | None:
        # The messages form renders the served chat template exactly as the chat path does.
        body = await fetch_json(client, "/tokenize", {"model": model, "messages": messages,
                                                      "add_generation_prompt": True},
                                engine="vLLM", what="counting chat tokens", key="count")
        return int(body["count"])

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        return {"max_tokens": max_tokens, "min_tokens": max_tokens, "ignore_eos": True}

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        return template_reasoning_fields(effort)
