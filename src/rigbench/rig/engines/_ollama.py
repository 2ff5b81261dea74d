"""Ollama (`ollama serve`): facts read from Ollama's source, tested against recorded responses."""

from __future__ import annotations

from typing import Any, Literal

from rigbench.client import ChatClient
from rigbench.rig._http import fetch_json, probe_json
from rigbench.rig._spec import EngineSpec, LaunchCommand, finish_argv
from rigbench.rig.engines._base import BaseAdapter, BaseEngine

__all__ = ["OLLAMA", "OllamaAdapter", "OllamaEngine", "OllamaLaunch", "ollama_command"]


class OllamaAdapter(BaseAdapter):
    # The defaults hold: no Prometheus endpoint, no tokenize endpoint (nor a chat-token count: known only
    # afterwards, from usage.prompt_tokens = prompt_eval_count), and no ignore_eos / min_tokens, so
    # max_tokens (the OpenAI route maps it to options.num_predict) only caps the output. The OpenAI route
    # maps reasoning_effort to `think`: "none" -> false, minimal -> low, low/medium/high/max kept, xhigh ->
    # max; other values are a 400.
    name = "ollama"
    health_path = "/"  # 200 "Ollama is running" as soon as the server listens (models load lazily)

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        version = await fetch_json(client, "/api/version", engine="Ollama", what="reading /api/version", key="version")
        ps = await probe_json(client, "/api/ps")
        loaded = ps.get("models") if isinstance(ps, dict) else None
        first = loaded[0] if isinstance(loaded, list) and loaded and isinstance(loaded[0], dict) else {}
        return {
            "engine": self.name,
            "version": version["version"],
            "model": first.get("model"),
            "context_length": first.get("context_length"),  # of the loaded runner; None until one is loaded
            "slots": None,  # OLLAMA_NUM_PARALLEL is not exposed over HTTP
            "raw": {"version": version, "ps": ps},
        }

    async def show(self, client: ChatClient, model: str) -> dict[str, Any]:
        """/api/show: the model's details, parameters, template, capabilities and GGUF metadata."""
        return await fetch_json(client, "/api/show", {"model": model}, engine="Ollama",
                                what=f"showing model {model!r}")


DEFAULT_PORT = 11434


class OllamaLaunch(EngineSpec):
    """`ollama serve`, configured by environment; the model is pulled and loaded on first request."""

    kind: Literal["ollama"] = "ollama"
    model: str  # the tag requests name, e.g. "qwen3:8b"
    context_length: int | None = None  # OLLAMA_CONTEXT_LENGTH
    num_parallel: int | None = None  # OLLAMA_NUM_PARALLEL
    flash_attention: bool | None = None  # OLLAMA_FLASH_ATTENTION
    kv_cache_type: str | None = None  # OLLAMA_KV_CACHE_TYPE: f16, q8_0, q4_0

    @property
    def served_name(self) -> str | None:  # requests name the tag itself
        return self.model


def ollama_command(s: OllamaLaunch) -> LaunchCommand:
    env = {"OLLAMA_HOST": f"{s.host}:{s.port or DEFAULT_PORT}"}
    if s.context_length is not None:
        env["OLLAMA_CONTEXT_LENGTH"] = str(s.context_length)
    if s.num_parallel is not None:
        env["OLLAMA_NUM_PARALLEL"] = str(s.num_parallel)
    if s.flash_attention is not None:
        env["OLLAMA_FLASH_ATTENTION"] = "1" if s.flash_attention else "0"
    if s.kv_cache_type is not None:
        env["OLLAMA_KV_CACHE_TYPE"] = s.kv_cache_type
    return LaunchCommand(finish_argv("ollama", s, [*(s.executable or ["ollama"]), "serve"]), env)


class OllamaEngine(BaseEngine):
    # The defaults hold: SIGTERM (it shuts down in its handler), no speculative decoding, nothing of
    # rigbench's to set up (the user or a plan rig starts it), and no command line for preflight to read:
    # Ollama is configured through its environment, not flags.
    name = "ollama"
    display_name = "Ollama"
    launch_spec = OllamaLaunch
    default_port = DEFAULT_PORT

    def adapter(self) -> OllamaAdapter:
        return OllamaAdapter()

    def slots_fix(self, slots: int) -> str:
        return f"start Ollama with OLLAMA_NUM_PARALLEL={slots}"

    async def identify(self, client: ChatClient) -> bool:
        version = await probe_json(client, "/api/version")
        return isinstance(version, dict) and isinstance(version.get("version"), str)

    def command(self, spec: OllamaLaunch) -> LaunchCommand:
        return ollama_command(spec)


OLLAMA = OllamaEngine()
