"""Engine name -> adapter."""

from __future__ import annotations

from typing import Literal, get_args

from rigbench.errors import UsageError
from rigbench.rig.engines._base import EngineAdapter
from rigbench.rig.engines._llamacpp import LlamaCppAdapter
from rigbench.rig.engines._ollama import OllamaAdapter
from rigbench.rig.engines._sglang import SGLangAdapter
from rigbench.rig.engines._vllm import VLLMAdapter

__all__ = ["ENGINE_NAMES", "EngineName", "get_adapter"]

EngineName = Literal["llamacpp", "vllm", "sglang", "ollama"]
ENGINE_NAMES: tuple[str, ...] = get_args(EngineName)

_ALIASES = {"llama.cpp": "llamacpp", "llama-server": "llamacpp", "llama_cpp": "llamacpp"}


def get_adapter(name: str) -> EngineAdapter:
    """The adapter for `name` ("llamacpp", "vllm", "sglang", "ollama"; "llama.cpp" also accepted)."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key == "llamacpp":
        return LlamaCppAdapter()
    if key == "vllm":
        return VLLMAdapter()
    if key == "sglang":
        return SGLangAdapter()
    if key == "ollama":
        return OllamaAdapter()
    raise UsageError(f"unknown engine {name!r}: rigbench knows {', '.join(ENGINE_NAMES)}. "
                     "For another OpenAI-compatible server, attach to it with --endpoint and no engine.")
