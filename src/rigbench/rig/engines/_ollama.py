"""Ollama (`ollama serve`): facts read from Ollama's source, tested against recorded responses."""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from rigbench.client import ChatClient
from rigbench.records import PreflightFinding, ServingCommand
from rigbench.rig.engines._base import PreflightInput
from rigbench.rig.engines._flags import FlagReading, FlagSyntax
from rigbench.rig.engines._http import get_json, post_json, probe_json, require_json
from rigbench.rig.engines._run_flags import RigFlags
from rigbench.rig.engines._spec import EngineSpec, LaunchCommand, finish_argv

if TYPE_CHECKING:
    from rigbench.rig._rig import LaunchedRig

__all__ = ["OLLAMA", "OllamaAdapter", "OllamaEngine", "OllamaLaunch", "ollama_command"]


class OllamaAdapter:
    name = "ollama"
    health_path = "/"  # 200 "Ollama is running" as soon as the server listens (models load lazily)
    metrics_path: str | None = None  # no Prometheus endpoint
    forced_length_exact = False  # no ignore_eos / min_tokens: max_tokens (num_predict) only caps

    per_position_metric: str | None = None
    reports_usage = True
    tokenize_unidentified = False  # it has no tokenize endpoint
    extra_gauges: Mapping[str, str] = MappingProxyType({})

    def __init__(self) -> None:
        self.metric_names: dict[str, str] = {}

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        url = client.server_root + "/api/version"
        status, version = await get_json(client, "/api/version")
        version = require_json(status, version, engine="Ollama", what="reading /api/version", url=url,
                               key="version")
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
        url = client.server_root + "/api/show"
        status, body = await post_json(client, "/api/show", {"model": model})
        return dict(require_json(status, body, engine="Ollama", what=f"showing model {model!r}", url=url))

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        return None  # Ollama has no tokenize endpoint

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None:
        return None

    async def count_chat_tokens(
        self, client: ChatClient, model: str, messages: list[dict[str, Any]]
    ) -> int | None:
        return None  # known only afterwards, from usage.prompt_tokens (prompt_eval_count)

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        # The OpenAI route maps max_tokens to options.num_predict; nothing makes it ignore EOS.
        return {"max_tokens": max_tokens}

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        # The OpenAI route maps reasoning_effort to `think`: "none" -> false, minimal -> low,
        # low/medium/high/max kept, xhigh -> max; other values are a 400.
        return {} if effort is None else {"reasoning_effort": effort}


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


class OllamaEngine:
    name = "ollama"
    aliases: tuple[str, ...] = ()
    display_name = "Ollama"
    launch_spec = OllamaLaunch
    default_port = DEFAULT_PORT
    start_timeout_s = 300.0
    death_signal = signal.SIGTERM  # shuts down in its handler
    speculative_flags: MappingProxyType[str, str] = MappingProxyType({})  # Ollama has no speculative decoding

    # Ollama is configured through its environment, not flags: preflight has no command line to read.
    flag_syntax = FlagSyntax(markers=(), programs=())
    context_overrun_note = ""
    context_fix = ""
    model_stop_fix = ""
    prefix_cache_reset = ""

    def adapter(self) -> OllamaAdapter:
        return OllamaAdapter()

    def slots_fix(self, slots: int) -> str:
        return f"start Ollama with OLLAMA_NUM_PARALLEL={slots}"

    def kv_accounting(self, settings: Mapping[str, int]) -> None:
        return None

    async def identify(self, client: ChatClient) -> bool:
        version = await probe_json(client, "/api/version")
        return isinstance(version, dict) and isinstance(version.get("version"), str)

    def command(self, spec: OllamaLaunch) -> LaunchCommand:
        return ollama_command(spec)

    def open(self, spec: Any, log_path: Path, *, api_key: str | None, note: Callable[[str], None],
             build_progress: Any) -> LaunchedRig:
        # function-level: the launcher is in the rig layer, which imports this registry
        from rigbench.rig._launcher import launched_rig

        return launched_rig(spec, log_path, engine=self, api_key=api_key)

    def setup(self, flags: RigFlags, note: Callable[[str], None],
              progress: Callable[[int, int | None, str], None]) -> None:
        return None  # started by the user or by a plan rig: nothing of rigbench's to prepare

    def rig_from_run_flags(self, flags: RigFlags) -> None:
        return None  # started by the user (attach with --endpoint) or by a plan rig's `launch:`

    def crash_hint(self, exit_code: int | None, log_text: str) -> str:
        return ""

    def preflight_rules(self, cmd: ServingCommand, given: PreflightInput) -> list[PreflightFinding]:
        return []

    def served_context(self, options: Mapping[str, str | bool]) -> FlagReading:
        return FlagReading(None, "")

    def flag_slots(self, options: Mapping[str, str | bool]) -> FlagReading:
        return FlagReading(None, "")

    def stop_strings(self, options: Mapping[str, str | bool]) -> list[str]:
        return []


OLLAMA = OllamaEngine()
