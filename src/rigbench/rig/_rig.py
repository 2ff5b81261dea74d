"""Rig lifecycle: launch (or attach), wait until healthy, measure startup, fingerprint, stop.

A rig is handed its engine (`RigEngine`: what it asks of an `Engine`) by whoever opens it: the engine's
own `Engine.open`, or `rig.open_rig`, which alone asks the registry. An endpoint or a verbatim command
whose engine is not known is told apart among the `candidates` it is given. So this module, which
engines import, imports no engine back (tests/unit/test_layering.py forbids the circle).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp

from rigbench.client import ChatClient, is_loopback_url, redact_url
from rigbench.errors import EndpointError, RigbenchError, RigStartError
from rigbench.records import Speculation, StartupTiming
from rigbench.rig._fingerprint import EngineBinary, Fingerprint, ModelInfo, host_info, now_iso, sha256_text
from rigbench.rig._http import probe_json
from rigbench.rig._info import RigInfo
from rigbench.rig._process import EngineProcess
from rigbench.rig._spec import LaunchCommand

__all__ = ["AttachedRig", "LaunchedRig", "RigAdapter", "RigEngine", "identify_engine", "speculative_in_argv"]


class RigAdapter(Protocol):
    """What a rig reads through its engine's adapter (an `EngineAdapter` is one)."""

    @property
    def health_path(self) -> str: ...

    @property
    def reports_usage(self) -> bool: ...

    async def server_info(self, client: ChatClient) -> dict[str, Any]: ...


class RigEngine(Protocol):
    """What launching, watching and fingerprinting a rig asks of its engine: an `Engine`
    (rigbench.rig.engines) is one, handed in by the code that opens the rig."""

    @property
    def name(self) -> str: ...

    @property
    def start_timeout_s(self) -> float: ...

    @property
    def death_signal(self) -> int: ...

    @property
    def speculative_flags(self) -> Mapping[str, str]: ...

    def adapter(self) -> RigAdapter: ...

    async def identify(self, client: ChatClient) -> bool: ...

    def command(self, spec: Any) -> LaunchCommand: ...

    def crash_hint(self, exit_code: int | None, log_text: str) -> str: ...


async def identify_engine(client: ChatClient, candidates: Sequence[RigEngine]) -> RigEngine | None:
    """The engine among `candidates` serving `client` (each one's `identify` probes endpoints only it has,
    in the order given), or None for another OpenAI-compatible server. Raises EndpointError if nothing
    answers at all."""
    try:
        await client.get_text(client.server_root + "/", timeout_s=5.0)
    except (aiohttp.ClientError, TimeoutError) as e:
        raise EndpointError(
            f"cannot reach {client.server_root}: {type(e).__name__}: {e}. Check the URL and that the "
            "server is running."
        ) from e
    for engine in candidates:
        if await engine.identify(client):
            return engine
    return None


def speculative_in_argv(argv: Sequence[str], flags: Mapping[str, str]) -> dict[str, Any] | None:
    """Draft model, kind and depth as `argv` sets them, read with `flags` (an engine's spelling -> key)."""
    spec: dict[str, Any] = {}
    for i, a in enumerate(argv[:-1]):
        if a in flags:
            spec[flags[a]] = argv[i + 1]
    return spec or None

# facts kept in fields of their own, not repeated in the fingerprint's server_info
_NOT_SERVER_INFO = frozenset({"chat_template", "speculation"})


async def _served_model_name(client: ChatClient) -> str | None:
    body = await probe_json(client, "/v1/models")
    if isinstance(body, dict) and isinstance(body.get("data"), list) and body["data"]:
        first = body["data"][0]
        if isinstance(first, dict) and first.get("id"):
            return str(first["id"])
    return None


async def _engine_facts(client: ChatClient, engine: RigEngine | None,
                        candidates: Sequence[RigEngine] = ()) -> tuple[RigEngine | None, dict[str, Any]]:
    """The engine (identified among `candidates` when not given) and what the server tells about itself
    through its adapter.

    Keys absent when not exposed; a server that answers none of its engine's endpoints gives {}.
    """
    try:
        known = engine or await identify_engine(client, candidates)
        facts: dict[str, Any] = (dict(await known.adapter().server_info(client)) if known is not None
                                 else {"engine": "unknown"})
    except RigbenchError:
        return engine, ({"engine": engine.name} if engine else {})
    facts.pop("raw", None)
    return known, facts


def _speculation(facts: dict[str, Any], argv: list[str] | None, flags: Mapping[str, str]) -> Speculation:
    """On / off / unknown: what the server shows (its engine adapter's `speculation` fact) where it tells,
    else the command rigbench launched (read with the engine's `flags`), else unknown. Never "off" from
    silence."""
    shown = facts.get("speculation")
    told = Speculation.model_validate(shown) if isinstance(shown, dict) else None
    if told is not None and told.state != "unknown":
        return told
    if argv is not None:
        found = speculative_in_argv(argv, flags)
        if found:
            return Speculation(state="on", source=f"the command rigbench launched sets {', '.join(sorted(found))}")
        return Speculation(state="off", source="the command rigbench launched sets no speculative flag")
    if told is not None:
        return told
    if facts.get("engine", "unknown") == "unknown":
        return Speculation(state="unknown", source="the server is no engine rigbench can identify, so nothing tells")
    return Speculation(state="unknown", source="the server does not show it")


def _startup_from(t_spawn: float, t_healthy: float, t_first: float) -> StartupTiming:
    return StartupTiming(
        spawn_to_healthy_s=t_healthy - t_spawn,
        healthy_to_first_completion_s=t_first - t_healthy,
        spawn_to_first_completion_s=t_first - t_spawn,
    )


async def _first_completion(client: ChatClient, model: str, timeout_s: float) -> None:
    """One tiny completion: a server is only started once it can answer."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        res = await client.stream_chat({"model": model, "max_tokens": 1, "temperature": 0,
                                        "messages": [{"role": "user", "content": "Hi"}]})
        if res.ok:
            return
        last = res.error.message if res.error else f"HTTP {res.http_status}"
        await asyncio.sleep(0.5)
    raise RigStartError(f"the server became healthy but no completion succeeded within {timeout_s:.0f} s "
                        f"(last: {last}).")


class LaunchedRig:
    """An engine process rigbench starts and stops itself (llama-server, vllm serve, ...)."""

    def __init__(
        self,
        argv: list[str],
        *,
        engine: RigEngine | None,
        port: int,
        log_path: Path,
        model: ModelInfo,
        draft_model: ModelInfo | None = None,
        host: str = "127.0.0.1",
        health_path: str = "/health",
        start_timeout_s: float = 300.0,
        api_key: str | None = None,
        engine_binary: EngineBinary | None = None,
        candidates: Sequence[RigEngine] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        """`engine`: the engine that launches it; None for a verbatim command that named none, which is told
        apart among `candidates` once it answers. `env`: variables the engine is configured through (added
        to rigbench's own environment)."""
        self.argv = argv
        self.engine_binary = engine_binary
        self.known = engine
        self.candidates = tuple(candidates)
        self.engine = engine.name if engine is not None else "unknown"
        self.port = port
        self.host = host
        self.model = model
        self.draft_model = draft_model
        self.health_path = health_path
        self.start_timeout_s = start_timeout_s
        self.process = EngineProcess(argv, log_path, env=env, death_signal=engine_death_signal(engine))
        self.base_url = f"http://{host}:{port}/v1"
        self.client = ChatClient(self.base_url, api_key=api_key)
        self.startup: StartupTiming | None = None
        self._facts: dict[str, Any] = {}
        self.served_name: str | None = model.served_name

    async def start(self) -> StartupTiming:
        t_spawn = time.monotonic()
        self.process.start(port=self.port, host=self.host)
        root = self.client.server_root
        deadline = t_spawn + self.start_timeout_s
        while True:
            code = self.process.exit_code()
            if code is not None:
                await self.client.aclose()
                raise RigStartError(
                    f"{self.engine} exited with code {code} while starting.\n  command: {self.process.command}\n"
                    f"  log: {self.process.log_path}\n  last lines:\n{_indent(self.process.log_tail())}"
                    + _crash_hint(self.known, code, self.process.log_tail(200))
                )
            with contextlib.suppress(Exception):
                status, _ = await self.client.get_json(f"{root}{self.health_path}", timeout_s=2)
                if status == 200:
                    break
            if time.monotonic() > deadline:
                self.process.stop()
                await self.client.aclose()
                raise RigStartError(
                    f"{self.engine} did not become healthy within {self.start_timeout_s:.0f} s.\n"
                    f"  command: {self.process.command}\n  log: {self.process.log_path}\n"
                    f"  last lines:\n{_indent(self.process.log_tail())}"
                )
            await asyncio.sleep(0.1)
        t_healthy = time.monotonic()
        self.served_name = self.served_name or await _served_model_name(self.client) or "default"
        try:
            await _first_completion(self.client, self.served_name, timeout_s=self.start_timeout_s)
        except RigStartError as e:
            code = self.process.exit_code()
            raise RigStartError(f"{e}\n  command: {self.process.command}\n  log: {self.process.log_path}"
                                + _crash_hint(self.known, code, self.process.log_tail(200))) from e
        t_first = time.monotonic()
        self.startup = _startup_from(t_spawn, t_healthy, t_first)
        self.known, self._facts = await _engine_facts(self.client, self.known, self.candidates)
        if self.known is not None:
            self.engine = self.known.name
        return self.startup

    def info(self) -> RigInfo:
        return RigInfo(engine=self.engine, model=self.served_name or "default", base_url=self.base_url,
                       server_root=self.client.server_root, context_length=self._facts.get("context_length"),
                       slots=self._facts.get("slots"), extra={"facts": self._facts})

    def fingerprint(self) -> Fingerprint:
        f = self._facts
        known = {"engine_version": f.get("version"), "context_length": f.get("context_length"),
                 "slots": f.get("slots"), "chat_template_sha256": f.get("chat_template")}
        unknown = [k for k, v in known.items() if v is None]
        return Fingerprint(
            mode="launched", argv=self.argv, engine=self.engine,
            engine_version=f.get("version"),
            endpoint=self.base_url, model=self.model.model_copy(update={"served_name": self.served_name}),
            draft_model=self.draft_model, chat_template_sha256=sha256_text(f.get("chat_template")),
            context_length=f.get("context_length"), slots=f.get("slots"),
            speculative=speculative_in_argv(self.argv, self._speculative_flags()),
            speculation=_speculation(f, self.argv, self._speculative_flags()), host=host_info(), host_is_server=True,
            started_at=now_iso(), unknown=unknown,
            server_info={k: v for k, v in f.items() if k not in _NOT_SERVER_INFO}, engine_binary=self.engine_binary,
            reports_usage=_reports_usage(self.known),
        )

    def _speculative_flags(self) -> Mapping[str, str]:
        """The engine's spellings; for a command whose engine is not known, every candidate's, since any of
        them may be in its argv."""
        if self.known is not None:
            return self.known.speculative_flags
        return {flag: key for e in self.candidates for flag, key in e.speculative_flags.items()}

    async def stop(self) -> None:
        await self.client.aclose()
        self.process.stop()


class AttachedRig:
    """An already-running OpenAI-compatible endpoint; records what it exposes, the rest as unknown."""

    def __init__(self, base_url: str, *, model: str | None, candidates: Sequence[RigEngine],
                 api_key: str | None = None) -> None:
        """`candidates`: the engines it may be (each asked to identify it; none that answers: "unknown")."""
        url = redact_url(base_url).rstrip("/")  # credentials in a URL are never sent, printed nor stored
        if not url.startswith(("http://", "https://")):
            raise EndpointError(f"--endpoint {url!r} is not an http(s) URL; e.g. http://127.0.0.1:8000/v1")
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError as e:
            raise EndpointError(f"--endpoint {url!r} is not a valid URL ({e}); e.g. http://127.0.0.1:8000/v1") from e
        if not parts.hostname:
            raise EndpointError(f"--endpoint {url!r} names no host; e.g. http://127.0.0.1:8000/v1")
        if not url.endswith("/v1"):
            url += "/v1"
        self.base_url = url
        self.client = ChatClient(url, api_key=api_key)
        self.requested_model = model
        self.served_name: str | None = model
        self._has_key = bool(api_key)
        self.candidates = tuple(candidates)
        self.known: RigEngine | None = None
        self.startup: StartupTiming | None = None
        self._facts: dict[str, Any] = {}

    async def start(self) -> None:
        try:
            status, body = await self.client.get_json("/models", timeout_s=10)
        except Exception as e:
            raise EndpointError(
                f"cannot reach {self.base_url}/models: {type(e).__name__}: {e}. Is the server running, and is "
                "the URL its OpenAI base (usually ending in /v1)?"
            ) from e
        if (status == 401 or status == 403) and self._has_key:
            raise EndpointError(f"{self.base_url}/models answered HTTP {status}: the server rejected the API key "
                                "given with --api-key-env. Check that the variable holds this server's key.")
        if status == 401 or status == 403:
            raise EndpointError(f"{self.base_url}/models answered HTTP {status}: the server wants an API key. "
                                "Put it in an environment variable and pass its name with --api-key-env.")
        if status != 200 or not isinstance(body, dict) or not isinstance(body.get("data"), list):
            raise EndpointError(
                f"{self.base_url}/models answered HTTP {status} with {str(body)[:200]!r}, not an OpenAI model "
                "list. Check the URL: rigbench needs an OpenAI-compatible server."
            )
        names = [m.get("id") for m in body["data"] if isinstance(m, dict)]
        if self.served_name is not None and names and self.served_name not in names:
            raise EndpointError(f"--model {self.served_name!r} is not served by {self.base_url}; it lists: "
                                f"{', '.join(map(str, names[:20]))}{' ...' if len(names) > 20 else ''}. "
                                "Pass one of those with --model, or leave --model out to use the first.")
        if self.served_name is None:
            if not names:
                raise EndpointError(f"{self.base_url} serves no models; pass --model NAME.")
            self.served_name = str(names[0])
        self.known, self._facts = await _engine_facts(self.client, None, self.candidates)

    def info(self) -> RigInfo:
        return RigInfo(engine=self._facts.get("engine", "unknown"), model=self.served_name or "default",
                       base_url=self.base_url, server_root=self.client.server_root,
                       context_length=self._facts.get("context_length"), slots=self._facts.get("slots"),
                       extra={"facts": self._facts})

    def fingerprint(self) -> Fingerprint:
        f = self._facts
        unknown = ["argv (the server was started outside rigbench: its flags are not recorded)",
                   "model file (path, size, sha256)"]
        for key in ("context_length", "slots"):
            if f.get(key) is None:
                unknown.append(key)
        if f.get("version") is None:
            unknown.append("engine_version")
        if f.get("chat_template") is None:
            unknown.append("chat_template_sha256")
        local = is_loopback_url(self.base_url)
        return Fingerprint(
            mode="attached", argv=None, engine=f.get("engine", "unknown"),
            engine_version=f.get("version"),
            endpoint=self.base_url, model=ModelInfo(served_name=self.served_name, path=f.get("model_path")),
            chat_template_sha256=sha256_text(f.get("chat_template")), context_length=f.get("context_length"),
            slots=f.get("slots"), speculative=None, speculation=_speculation(f, None, {}),
            host=host_info(probe_bandwidth=local), host_is_server=local, started_at=now_iso(), unknown=unknown,
            server_info={k: v for k, v in f.items() if k not in _NOT_SERVER_INFO},
            reports_usage=_reports_usage(self.known),
        )

    async def stop(self) -> None:
        await self.client.aclose()


def _crash_hint(engine: RigEngine | None, code: int | None, log_text: str) -> str:
    """What the engine's own module makes of its death (a CPU-path crash and the flag that avoids it); nothing
    for a verbatim command whose engine never said what it is."""
    return engine.crash_hint(code, log_text) if engine is not None else ""


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) or "    (empty)"


def _reports_usage(engine: RigEngine | None) -> bool | None:
    """Whether `engine` sends usage in a stream when asked (None for an engine rigbench does not know)."""
    return engine.adapter().reports_usage if engine is not None else None


def engine_death_signal(engine: RigEngine | None) -> int:
    """The signal an engine gets when rigbench dies without stopping it: its `death_signal`, and
    SIGTERM for an engine rigbench does not know (the graceful one)."""
    return int(engine.death_signal) if engine is not None else signal.SIGTERM

