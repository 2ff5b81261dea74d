"""Telling which engine serves an unknown endpoint, from endpoints only that engine has."""

from __future__ import annotations

import aiohttp

from rigbench.client import ChatClient
from rigbench.errors import EndpointError
from rigbench.rig.engines._http import probe_json

__all__ = ["detect_engine"]


async def detect_engine(client: ChatClient) -> str:
    """"llamacpp", "vllm", "sglang", "ollama", or "unknown" for another OpenAI-compatible server.

    Probes, in order: llama.cpp's /props; Ollama's /api/version; SGLang's /server_info (or the
    older /get_server_info), told apart from vLLM's dev-mode /server_info by its keys; vLLM's
    /version, confirmed by `owned_by: "vllm"` in /v1/models or `vllm:` metrics. Raises
    EndpointError if nothing answers at all.
    """
    await _reachable(client)
    props = await probe_json(client, "/props")
    if isinstance(props, dict) and ("build_info" in props or "default_generation_settings" in props):
        return "llamacpp"
    version = await probe_json(client, "/api/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        return "ollama"
    for path in ("/server_info", "/get_server_info"):
        info = await probe_json(client, path)
        if isinstance(info, dict) and "version" in info and {"model_path", "internal_states"} & info.keys():
            return "sglang"
    version = await probe_json(client, "/version")
    if isinstance(version, dict) and "version" in version:
        models = await probe_json(client, "/v1/models")
        owners = {m.get("owned_by") for m in (models or {}).get("data", []) if isinstance(m, dict)} \
            if isinstance(models, dict) else set()
        if "vllm" in owners or await _has_metric_prefix(client, "vllm:"):
            return "vllm"
    return "unknown"


async def _reachable(client: ChatClient) -> None:
    try:
        await client.get_text(client.server_root + "/", timeout_s=5.0)
    except (aiohttp.ClientError, TimeoutError) as e:
        raise EndpointError(
            f"cannot reach {client.server_root}: {type(e).__name__}: {e}. Check the URL and that the "
            "server is running."
        ) from e


async def _has_metric_prefix(client: ChatClient, prefix: str) -> bool:
    try:
        status, text = await client.get_text(client.server_root + "/metrics", timeout_s=5.0)
    except (aiohttp.ClientError, TimeoutError):
        return False
    return status == 200 and f"\n{prefix}" in "\n" + text
