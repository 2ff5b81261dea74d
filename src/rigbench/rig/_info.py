"""What a rig tells the suites about itself (the rig produces it; suites read it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RigInfo"]


@dataclass(frozen=True)
class RigInfo:
    """What a suite may need to know about the rig under test."""

    engine: str  # "llamacpp" | "vllm" | "sglang" | "ollama" | "unknown"
    model: str  # the name to put in requests' "model" field
    base_url: str  # OpenAI base URL, ending in /v1
    server_root: str  # base URL without /v1: /health, /metrics, /tokenize live here
    context_length: int | None = None  # served context per request, when known
    slots: int | None = None  # parallel slots / max concurrent sequences, when known
    extra: dict[str, Any] = field(default_factory=dict)
