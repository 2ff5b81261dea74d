"""Telling which engine serves an unknown endpoint, from endpoints only that engine has."""

from __future__ import annotations

import aiohttp

from rigbench.client import ChatClient
from rigbench.errors import EndpointError
from rigbench.rig.engines._registry import known_engines

__all__ = ["detect_engine"]


async def detect_engine(client: ChatClient) -> str:
    """The name of the engine serving `client`, or "unknown" for another OpenAI-compatible server.

    Each engine's `identify` probes endpoints only it has, in registry order (llama.cpp's /props,
    Ollama's /api/version, SGLang's /server_info, vLLM's /version; the cheapest and most specific
    first). Raises EndpointError if nothing answers at all.
    """
    await _reachable(client)
    for engine in known_engines():
        if await engine.identify(client):
            return engine.name
    return "unknown"


async def _reachable(client: ChatClient) -> None:
    try:
        await client.get_text(client.server_root + "/", timeout_s=5.0)
    except (aiohttp.ClientError, TimeoutError) as e:
        raise EndpointError(
            f"cannot reach {client.server_root}: {type(e).__name__}: {e}. Check the URL and that the "
            "server is running."
        ) from e
