"""What rigbench needs to know about one serving engine: the `Engine` protocol and its adapter.

An `Engine` is one module under `rig/engines/` that owns everything engine-specific: its adapter
(endpoints, version, metric names, tokenize), how a running server is identified as it, its typed
launch spec and command-line builder, how it starts, what its speculative-decoding flags mean,
and how its command lines read and what traps preflight checks in them. The rest of rigbench
reaches an engine only through `get_engine(name)` / `known_engines()`, so adding one is adding a
module (docs/engines.md).

An adapter holds the engine's facts (endpoints, metric names, request knobs) and the few calls
that differ between engines. Everything else talks plain OpenAI API through `ChatClient`.

`BaseEngine` and `BaseAdapter` implement both protocols with defaults that work for a plain
OpenAI-compatible server that rigbench launches from a typed spec, so an engine writes only what
differs: its `name`, `launch_spec`, `command(spec)`, `identify(client)` and `adapter()` (an adapter
writes its `name`). A plain object implementing the protocols is still an engine (the registry
checks every member); subclassing is how an engine gets the defaults.
"""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Protocol

from pydantic import Field

from rigbench.analysis import BlockAccounting
from rigbench.client import ChatClient
from rigbench.records import Frozen, PreflightFinding, ServingCommand
from rigbench.rig._http import probe_json
from rigbench.rig._launcher import launched_rig
from rigbench.rig._rig import LaunchedRig
from rigbench.rig._spec import EngineSpec, LaunchCommand
from rigbench.rig.engines._flags import FlagReading, FlagSyntax
from rigbench.rig.engines._run_flags import RigFlags

__all__ = ["BaseAdapter", "BaseEngine", "Engine", "EngineAdapter", "MetricNames", "PreflightInput", "ScenarioLength"]


class ScenarioLength(Frozen):
    name: str
    input_tokens: int
    output_tokens: int


class PreflightInput(Frozen):
    """What the run is about to ask of the server (all optional)."""

    uses_tools: bool = False
    concurrency: list[int] = Field(default_factory=list)
    scenarios: list[ScenarioLength] = Field(default_factory=list)
    stop: list[str] = Field(default_factory=list)  # stop strings rigbench's requests will send
    served_context_tokens: int | None = None  # per request, as the live server reports it
    server_slots: int | None = None  # as the live server reports it
    engine: str | None = None  # what the live server was identified as (its remedies, when no command line says)


class MetricNames(Protocol):
    """Canonical telemetry name -> this engine's Prometheus metric name (None: not exported)."""

    def get(self, canonical: str) -> str | None: ...


class EngineAdapter(Protocol):
    name: str  # "llamacpp" | "vllm" | "sglang" | "ollama"
    health_path: str  # relative to the server root, e.g. "/health"
    metrics_path: str | None  # Prometheus endpoint relative to the server root, or None
    # canonical -> engine metric name. Canonical names: kv_cache_usage_ratio, requests_running,
    # requests_waiting, spec_draft_tokens_total, spec_accepted_tokens_total, spec_drafts_total,
    # prompt_tokens_total, generation_tokens_total; spec_accept_length, spec_accept_rate (gauges,
    # for engines that export a mean instead of counters: SGLang); kv_pool_tokens (a gauge)
    metric_names: dict[str, str]
    # accepted draft tokens per draft position, a counter labelled `position` (None: not exported)
    per_position_metric: str | None
    # whether a stream carries usage.completion_tokens when asked (stream_options.include_usage); recorded
    # in the fingerprint so that analysis can flag a run whose server left it out
    reports_usage: bool
    # whether its tokenize body is worth trying on a server not identified as any engine (a request each)
    tokenize_unidentified: bool
    # gauges outside `metric_names` (canonical -> engine name), read as the largest series: names taken
    # from the engine's source that no recorded scrape holds yet (SGLang's KV pool size)
    extra_gauges: Mapping[str, str]
    # False: the engine has no way to force the output length (Ollama), so forced_length_fields
    # only caps it and a run must count the tokens actually produced
    forced_length_exact: bool

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        """Version, build and whatever serving configuration the server exposes."""
        ...

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        """Token ids of raw text (no template, no BOS), or None if the engine has no endpoint."""
        ...

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None: ...

    async def count_chat_tokens(
        self, client: ChatClient, model: str, messages: list[dict[str, Any]]
    ) -> int | None:
        """Prompt tokens of `messages` *after* the chat template, or None if not knowable up front."""
        ...

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        """Extra request fields that make the engine generate exactly `max_tokens` tokens."""
        ...

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        """Extra request fields for a reasoning effort ("none" turns thinking off; None: model default)."""
        ...


class Engine(Protocol):
    """One serving engine's knowledge, one module each (rig/engines/_llamacpp.py, ...)."""

    # Read-only facts (properties here so that an engine may declare them as plain class attributes).
    @property
    def name(self) -> str:
        """The launch spec's `kind` and the fingerprint's `engine`."""
        ...

    @property
    def aliases(self) -> tuple[str, ...]:
        """Other spellings a user may type, e.g. "llama.cpp"."""
        ...

    @property
    def display_name(self) -> str:
        """How texts for people name it ("llama.cpp", "vLLM")."""
        ...

    @property
    def launch_spec(self) -> type[EngineSpec]:
        """Its typed launch spec, whose `kind` defaults to `name` (plan files: `launch: {kind: NAME, ...}`)."""
        ...

    @property
    def default_port(self) -> int:
        """Where it listens when the spec names no port."""
        ...

    @property
    def start_timeout_s(self) -> float:
        """Spawn -> first completion before rigbench gives up on a launch."""
        ...

    @property
    def death_signal(self) -> int:
        """The signal it gets when rigbench dies without stopping it (`prctl(PR_SET_PDEATHSIG)`):
        SIGTERM lets it shut down; an engine that can hang in its handler takes SIGKILL."""
        ...

    @property
    def speculative_flags(self) -> Mapping[str, str]:
        """Command-line flag -> key in the fingerprint's `speculative` facts (which draft, how deep)."""
        ...

    def adapter(self) -> EngineAdapter:
        """A fresh adapter (adapters keep per-instance metric tables)."""
        ...

    async def identify(self, client: ChatClient) -> bool:
        """Whether the server behind `client` is this engine, from endpoints only it has."""
        ...

    def command(self, spec: Any) -> LaunchCommand:
        """The exact argv and environment that start `spec` (an instance of `launch_spec`)."""
        ...

    def crash_hint(self, exit_code: int | None, log_text: str) -> str:
        """For an engine that died while starting: the likely cause and what avoids it ("" if unknown)."""
        ...

    def open(self, spec: Any, log_path: Path, *, api_key: str | None, note: Callable[[str], None],
             build_progress: Any) -> LaunchedRig:
        """The rig `spec` (its launch spec, or another spec it owns: llama.cpp's embedded rig) starts, ready
        to `start()`, its log at `log_path`: what it needs found, built or fetched first. An engine with
        nothing of its own to prepare returns `rigbench.rig.launched_rig(spec, log_path, engine=self, api_key=api_key)`
        (`BaseEngine.open`)."""
        ...

    def setup(self, flags: RigFlags, note: Callable[[str], None],
              progress: Callable[[int, int | None, str], None]) -> str | None:
        """`rigbench setup --engine NAME`: fetch, build or install ahead of time (cached) what launching it
        needs, saying what was done through `note`; returns what `rigbench run` will then use (one line),
        or None when there is nothing to prepare (the user starts it, or it needs nothing)."""
        ...

    def rig_from_run_flags(self, flags: RigFlags) -> dict[str, Any] | None:
        """The plan rig section (`{"launch": spec}`, or `{"embedded": {...}}`) that `rigbench run --engine
        NAME` makes of the run's rig flags, refusing a flag it cannot honour (UsageError); None: `rigbench
        run` does not launch this engine (the user starts it and attaches, or writes a plan rig)."""
        ...

    # -- its command line, as preflight reads it ------------------------------------------------

    @property
    def flag_syntax(self) -> FlagSyntax:
        """How to recognise its command lines and split them into flags."""
        ...

    @property
    def context_overrun_note(self) -> str:
        """What this engine does with a request past its context (appended to that finding; "" if untested)."""
        ...

    @property
    def context_fix(self) -> str:
        """How to raise its served context, for that finding's fix ("" if no flag does)."""
        ...

    @property
    def model_stop_fix(self) -> str:
        """How to make it stop on the model's own end-of-turn tokens, for the stop-string finding's fix
        ("" if it does without a flag)."""
        ...

    @property
    def prefix_cache_reset(self) -> str:
        """How to empty its prefix cache without a restart, for the prefix-cache remedy ("" if only a restart does)."""
        ...

    def slots_fix(self, slots: int) -> str:
        """How to serve `slots` requests at once, for the slots finding's fix ("" if no flag or setting does)."""
        ...

    def kv_accounting(self, settings: Mapping[str, int]) -> BlockAccounting | None:
        """How it cuts its KV pool into blocks, for `rigbench kv --engine NAME` (None: it does not, and
        per-token bytes model it). `settings`: what the user set of block_size, max_num_batched_tokens and
        batches_in_flight; the engine's defaults for the rest."""
        ...

    def preflight_rules(self, cmd: ServingCommand, given: PreflightInput) -> list[PreflightFinding]:
        """Its own configuration traps in `cmd`; the engine-independent rules live in rigbench.honesty."""
        ...

    def served_context(self, options: Mapping[str, str | bool]) -> FlagReading:
        """Tokens per request its flags serve (None when they do not say)."""
        ...

    def flag_slots(self, options: Mapping[str, str | bool]) -> FlagReading:
        """Requests served at once, when its flags say so exactly (None: ask the live server)."""
        ...

    def stop_strings(self, options: Mapping[str, str | bool]) -> list[str]:
        """Stop strings its flags set server-side."""
        ...


# -- the defaults: an engine subclasses these and writes only what differs ----------------------------


class BaseAdapter(ABC):
    """An `EngineAdapter` for a plain OpenAI-compatible server; a subclass sets `name` and overrides what its
    engine does otherwise. The defaults claim nothing the server has not shown: no telemetry names, no
    tokenize endpoint, no forced output length (so a run counts the tokens actually produced)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The engine's name (a class attribute in the subclass)."""

    health_path = "/v1/models"  # any OpenAI-compatible server answers it once it is up
    metrics_path: str | None = None
    # class-level tables, copied per instance into `metric_names` / `metric_fallbacks` (adapters may edit theirs)
    metrics: ClassVar[Mapping[str, str]] = MappingProxyType({})
    fallbacks: ClassVar[Mapping[str, str]] = MappingProxyType({})  # older versions' names (canonical_values)
    per_position_metric: str | None = None
    reports_usage = True  # the fingerprint records it; analysis flags a run whose server then left usage out
    tokenize_unidentified = False
    extra_gauges: Mapping[str, str] = MappingProxyType({})
    forced_length_exact = False  # max_tokens only caps: a run must count the tokens actually produced

    def __init__(self) -> None:
        self.metric_names: dict[str, str] = dict(self.metrics)
        self.metric_fallbacks: dict[str, str] = dict(self.fallbacks)

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        """What `/v1/models` shows: the served model and its context when listed; no version (None)."""
        models = await probe_json(client, "/v1/models")
        data = models.get("data") if isinstance(models, dict) else None
        first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
        return {"engine": self.name, "version": None, "model": first.get("id"),
                "context_length": first.get("max_model_len"), "slots": None, "raw": {"models": models}}

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        return None

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None:
        return None

    async def count_chat_tokens(
        self, client: ChatClient, model: str, messages: list[dict[str, Any]]
    ) -> int | None:
        return None  # known only afterwards, from usage.prompt_tokens

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        return {"max_tokens": max_tokens}

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        # the OpenAI API's own field; None leaves the model's default
        return {} if effort is None else {"reasoning_effort": effort}


class BaseEngine(ABC):
    """An `Engine` with working defaults: launched from its typed spec as `command(spec)` says, nothing to
    set up, no command line of its own for preflight to read, no remedies to quote. A subclass sets `name` and
    `launch_spec` and writes `command`, `identify` and `adapter` (abstract: a subclass missing one cannot be
    made, so it fails when imported, never mid-run); every other member is overridable."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The launch spec's `kind` and the fingerprint's `engine` (a class attribute in the subclass)."""

    @property
    @abstractmethod
    def launch_spec(self) -> type[EngineSpec]:
        """Its typed launch spec (a class attribute in the subclass)."""

    aliases: tuple[str, ...] = ()
    default_port = 8000
    start_timeout_s = 300.0
    death_signal: int = signal.SIGTERM  # shuts down in its handler
    speculative_flags: Mapping[str, str] = MappingProxyType({})
    flag_syntax = FlagSyntax(markers=(), programs=())  # no command line preflight recognises as its own
    context_overrun_note = ""
    context_fix = ""
    model_stop_fix = ""
    prefix_cache_reset = ""

    @property
    def display_name(self) -> str:
        return self.name

    @abstractmethod
    def adapter(self) -> EngineAdapter:
        """A fresh adapter (a `BaseAdapter` subclass, say)."""

    @abstractmethod
    async def identify(self, client: ChatClient) -> bool:
        """Whether the server behind `client` is this engine, from endpoints only it has."""

    @abstractmethod
    def command(self, spec: Any) -> LaunchCommand:
        """The exact argv and environment that start `spec`."""

    def crash_hint(self, exit_code: int | None, log_text: str) -> str:
        return ""

    def open(self, spec: Any, log_path: Path, *, api_key: str | None, note: Callable[[str], None],
             build_progress: Any) -> LaunchedRig:
        return launched_rig(spec, log_path, engine=self, api_key=api_key)

    def setup(self, flags: RigFlags, note: Callable[[str], None],
              progress: Callable[[int, int | None, str], None]) -> str | None:
        return None  # started by the user or by a plan rig: nothing of rigbench's to prepare

    def rig_from_run_flags(self, flags: RigFlags) -> dict[str, Any] | None:
        return None  # started by the user (attach with --endpoint) or by a plan rig's `launch:`

    def slots_fix(self, slots: int) -> str:
        return ""

    def kv_accounting(self, settings: Mapping[str, int]) -> BlockAccounting | None:
        return None

    def preflight_rules(self, cmd: ServingCommand, given: PreflightInput) -> list[PreflightFinding]:
        return []

    def served_context(self, options: Mapping[str, str | bool]) -> FlagReading:
        return FlagReading(None, "")

    def flag_slots(self, options: Mapping[str, str | bool]) -> FlagReading:
        return FlagReading(None, "")

    def stop_strings(self, options: Mapping[str, str | bool]) -> list[str]:
        return []
