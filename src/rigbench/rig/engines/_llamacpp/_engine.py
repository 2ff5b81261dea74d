"""llama.cpp `llama-server`: facts verified against a live server (see docs/engines.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rigbench.client import ChatClient
from rigbench.errors import UsageError
from rigbench.records import PreflightFinding, ServingCommand
from rigbench.rig._http import fetch_json, probe_json
from rigbench.rig._models import EMBEDDED_MODEL
from rigbench.rig._rig import LaunchedRig
from rigbench.rig._spec import LaunchCommand
from rigbench.rig.engines._base import BaseAdapter, BaseEngine, PreflightInput
from rigbench.rig.engines._flags import FlagReading, FlagSyntax, int_flag
from rigbench.rig.engines._llamacpp._crash import classify_crash
from rigbench.rig.engines._llamacpp._embedded import EmbeddedRig, prepare_llamacpp_rig
from rigbench.rig.engines._llamacpp._launch import (
    DEATH_SIGNAL,
    DEFAULT_PORT,
    LlamaCppLaunch,
    llamacpp_command,
    server_argv,
)
from rigbench.rig.engines._llamacpp._run_flags import embedded_from_run_flags
from rigbench.rig.engines._llamacpp._smoke import ensure_llama_server
from rigbench.rig.engines._run_flags import RigFlags

__all__ = [
    "LLAMACPP", "LlamaCppAdapter", "LlamaCppEngine", "LlamaCppLaunch", "llamacpp_command", "llamacpp_speculation",
    "server_argv"]

_METRICS = {
    "requests_running": "llamacpp:requests_processing",
    "requests_waiting": "llamacpp:requests_deferred",
    "prompt_tokens_total": "llamacpp:prompt_tokens_total",
    "generation_tokens_total": "llamacpp:tokens_predicted_total",
    "spec_draft_tokens_total": "llamacpp:spec_decode_num_draft_tokens_total",
    "spec_accepted_tokens_total": "llamacpp:spec_decode_num_accepted_tokens_total",
    "spec_drafts_total": "llamacpp:spec_decode_num_drafts_total",
}
# Builds before the KV-cache gauges were dropped exported the usage ratio under this name.
_FALLBACKS = {"kv_cache_usage_ratio": "llamacpp:kv_cache_usage_ratio"}


def llamacpp_speculation(props: dict[str, Any], slots: Any) -> dict[str, Any]:
    """`rigbench.records.Speculation`'s fields as the server shows them: each slot's `speculative` in /slots
    (`can_speculate()`: a drafter is set up for it). /props' `speculative.types` is the requests' default,
    not the server's drafter (seen live: "none" on a `--spec-type ngram-simple` server), so it only names
    the method when it names one, and never decides the state."""
    types = ((props.get("default_generation_settings") or {}).get("params") or {}).get("speculative.types")
    method = types if isinstance(types, str) and types not in ("", "none") else None
    flags = [s.get("speculative") for s in slots if isinstance(s, dict)] if isinstance(slots, list) else []
    if flags and all(isinstance(f, bool) for f in flags):
        if any(flags):
            return {"state": "on", "source": "the server's /slots: its slots speculate", "method": method}
        return {"state": "off", "source": "the server's /slots: no slot speculates"}
    return {"state": "unknown", "source": "the server serves no /slots (--no-slots), which alone tells"}


class LlamaCppAdapter(BaseAdapter):
    name = "llamacpp"
    health_path = "/health"  # 503 {"error": ...} while loading, 200 {"status": "ok"} when ready
    metrics_path: str | None = "/metrics"  # only with --metrics
    metrics = MappingProxyType(_METRICS)
    fallbacks = MappingProxyType(_FALLBACKS)
    forced_length_exact = True
    # pinned build 11434, tools/server/server-context.cpp; checked against a live `llama-server --metrics`
    per_position_metric: str | None = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
    tokenize_unidentified = True  # POST /tokenize {"content": ...}

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        props = await fetch_json(client, "/props", engine="llama.cpp", what="reading /props")
        settings = props.get("default_generation_settings") or {}
        info: dict[str, Any] = {
            "engine": self.name,
            "version": props.get("build_info"),
            "model": props.get("model_alias") or props.get("model_path"),
            "context_length": settings.get("n_ctx"),  # per slot
            "slots": props.get("total_slots"),
            "chat_template": props.get("chat_template"),
        }
        if props:  # recorded in the fingerprint: what the server loaded and which speculative kinds it runs
            info["model_path"] = props.get("model_path")
            info["chat_template_caps"] = props.get("chat_template_caps")
            info["speculative_types"] = (settings.get("params") or {}).get("speculative.types")
        info["speculation"] = llamacpp_speculation(props, await probe_json(client, "/slots"))
        info["raw"] = {"props": props}
        return info

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        body = await fetch_json(client, "/tokenize", {"content": text, "add_special": False}, engine="llama.cpp",
                                what="tokenizing", key="tokens")
        return [int(t) for t in body["tokens"]]

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None:
        body = await fetch_json(client, "/detokenize", {"tokens": tokens}, engine="llama.cpp", what="detokenizing",
                                key="content")
        return str(body["content"])

    async def count_chat_tokens(
        self, client: ChatClient, model: str, messages: list[dict[str, Any]]
    ) -> int | None:
        # Render with the server's own template, then tokenize the way the chat path does
        # (add_special and parse_special both on), so the count equals usage.prompt_tokens.
        body = await fetch_json(client, "/apply-template", {"messages": messages}, engine="llama.cpp",
                                what="rendering the chat template", key="prompt")
        toks = await fetch_json(client, "/tokenize", {"content": body["prompt"], "add_special": True,
                                                      "parse_special": True},
                                engine="llama.cpp", what="tokenizing the rendered chat", key="tokens")
        return len(toks["tokens"])

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        return {"max_tokens": max_tokens, "ignore_eos": True}

    # reasoning_fields: the default (reasoning_effort): the server maps "none" to enable_thinking=false and
    # passes any other value to the chat template as `reasoning_effort` (needs --jinja).


# -- reading a `llama-server` command line, and its traps -----------------------------------------

LLAMACPP_FLAGS = FlagSyntax(
    markers=("llama-server", "llama_cpp.server"), programs=("llama-server",),
    bare=frozenset({"--jinja", "--no-jinja", "--metrics", "--kv-unified", "--no-kv-unified", "--cont-batching",
                    "--no-cont-batching", "--embeddings", "--no-webui", "--slots", "--no-slots", "-cb", "-kvu"}),
    aliases=MappingProxyType({
        "-m": "--model", "-c": "--ctx-size", "-np": "--parallel", "-md": "--spec-draft-model",
        "--model-draft": "--spec-draft-model", "-ngl": "--n-gpu-layers", "-ctk": "--cache-type-k",
        "-ctv": "--cache-type-v", "-a": "--alias", "-fa": "--flash-attn", "-b": "--batch-size",
        "-ub": "--ubatch-size", "-t": "--threads", "-r": "--reverse-prompt",
    }))


def llamacpp_preflight(cmd: ServingCommand, inp: PreflightInput) -> list[PreflightFinding]:
    out: list[PreflightFinding] = []
    o = cmd.options
    synth = [f for f in ("--spec-synth-len", "--spec-synth-rates") if f in o]
    if synth:
        out.append(PreflightFinding(
            id="synthetic_acceptance", severity="error",
            problem=("synthetic speculative acceptance accepts drafted tokens at random instead of verifying "
                     "them: the output is invalid by design (llama.cpp: 'benchmarking only'). Speed numbers "
                     "from it describe no real rig."),
            evidence=" ".join(f"{f} {o[f]}" for f in synth),
            fix=f"remove {' and '.join(synth)}"))
    if inp.uses_tools and "--no-jinja" in o:
        out.append(PreflightFinding(
            id="tools_without_parser", severity="error",
            problem="the run sends tools, but --no-jinja disables the chat-template engine that llama-server "
                    "needs to format tools and parse tool calls.",
            evidence="--no-jinja", fix="drop --no-jinja (or pass --jinja on builds where it is not the default)"))
    return out


def _llamacpp_context(o: Mapping[str, str | bool]) -> FlagReading:
    c = int_flag(o, "--ctx-size")
    np_ = int_flag(o, "--parallel")
    if c and np_ and np_ > 0 and "--kv-unified" not in o and "-kvu" not in o:
        return FlagReading(c // np_, f"--ctx-size {c} / --parallel {np_} slots = {c // np_} per request")
    return FlagReading(c, f"--ctx-size {c}")


def _llamacpp_slots(o: Mapping[str, str | bool]) -> FlagReading:
    slots = int_flag(o, "--parallel")
    how = f"--parallel {slots}"
    if slots is not None and slots <= 0:
        slots = None  # -1 = auto: the live server reports the real number
    return FlagReading(slots, how)


class LlamaCppEngine(BaseEngine):
    name = "llamacpp"
    aliases = ("llama.cpp", "llama-server", "llama_cpp")
    display_name = "llama.cpp"
    launch_spec = LlamaCppLaunch
    default_port = DEFAULT_PORT
    start_timeout_s = 300.0
    death_signal = DEATH_SIGNAL
    # current spellings and the removed ones (--draft-max, --draft, --draft-n) that older argv carries
    speculative_flags = MappingProxyType({
        "-md": "draft_model", "--model-draft": "draft_model", "--spec-type": "type",
        "--draft-max": "draft_max", "--draft": "draft_max", "--draft-n": "draft_max",
        "--spec-draft-n-max": "draft_max", "--draft-min": "draft_min", "--spec-synth-len": "synthetic_length",
    })

    flag_syntax = LLAMACPP_FLAGS
    context_fix = "llama-server -c with fewer -np slots"

    def adapter(self) -> LlamaCppAdapter:
        return LlamaCppAdapter()

    def slots_fix(self, slots: int) -> str:
        return f"start llama-server with -np {slots} (and -c scaled to keep per-slot context)"

    async def identify(self, client: ChatClient) -> bool:
        props = await probe_json(client, "/props")
        return isinstance(props, dict) and ("build_info" in props or "default_generation_settings" in props)

    def command(self, spec: LlamaCppLaunch) -> LaunchCommand:
        return llamacpp_command(spec)

    def open(self, spec: Any, log_path: Path, *, api_key: str | None, note: Callable[[str], None],
             build_progress: Any) -> LaunchedRig:
        """The embedded rig (llama-server found or built and smoke-tested, the model fetched), or a launch spec."""
        if isinstance(spec, EmbeddedRig):
            return prepare_llamacpp_rig(spec.config(), log_path, llamacpp=self, build_progress=build_progress, note=note)
        return super().open(spec, log_path, api_key=api_key, note=note, build_progress=build_progress)

    def setup(self, flags: RigFlags, note: Callable[[str], None],
              progress: Callable[[int, int | None, str], None]) -> str:
        """The embedded rig's parts: SmolLM2-135M (sha256-checked), llama-server found or built and smoke-tested."""
        model = EMBEDDED_MODEL.resolve()
        note(f"model: {model} (sha256 verified)")
        found = ensure_llama_server(Path(flags.llama_server) if flags.llama_server else None, lambda: model,
                                    progress=progress, note=note)
        build = f", {found.build_variant} CPU build" if found.build_variant else ""
        made = f" from {found.package}, llama.cpp {found.source_build}" if found.package else ""
        note(f"llama-server: {found.path} ({found.origin}{build}{made}; smoke test {found.smoke_test})")
        if found.fallback != "none":
            note(f"CPU fallback in use: {found.fallback} ({found.fallback_reason}); it can lower decode speed")
        return "`rigbench run` will use these."

    def rig_from_run_flags(self, flags: RigFlags) -> dict[str, Any]:
        """The embedded rig, with the flags given."""
        if flags.vllm_python or flags.kv_cache_gib:
            raise UsageError("--vllm-python and --kv-cache-gib apply to --engine vllm only.")
        return {"embedded": embedded_from_run_flags(flags)}

    def crash_hint(self, exit_code: int | None, log_text: str) -> str:
        crash = classify_crash(exit_code, log_text)
        return "" if crash is None else f"\n  cause: {crash.cause}\n  avoid it with: {crash.avoided_by}"

    def preflight_rules(self, cmd: ServingCommand, given: PreflightInput) -> list[PreflightFinding]:
        return llamacpp_preflight(cmd, given)

    def served_context(self, options: Mapping[str, str | bool]) -> FlagReading:
        return _llamacpp_context(options)

    def flag_slots(self, options: Mapping[str, str | bool]) -> FlagReading:
        return _llamacpp_slots(options)

    def stop_strings(self, options: Mapping[str, str | bool]) -> list[str]:
        return [str(options[f]) for f in ("--reverse-prompt", "--stop") if isinstance(options.get(f), str)]


LLAMACPP = LlamaCppEngine()
