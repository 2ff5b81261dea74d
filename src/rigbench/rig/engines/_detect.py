"""Telling which engine serves an unknown endpoint, from endpoints only that engine has."""

from __future__ import annotations

from rigbench.client import ChatClient
from rigbench.rig._rig import identify_engine
from rigbench.rig.engines._registry import known_engines

__all__ = ["detect_engine"]


async def detect_engine(client: ChatClient) -> str:
    """The name of the engine serving `client`, or "unknown" for another OpenAI-compatible server.

    Each engine's `identify` probes endpoints only it has, in registry order (llama.cpp's /props,
    Ollama's /api/version, SGLang's /server_info, vLLM's /version; the cheapest and most specific
    first). Raises EndpointError if nothing answers at all.
    """
    found = await identify_engine(client, known_engines())
    return found.name if found is not None else "unknown"
