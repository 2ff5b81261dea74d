"""The Engine protocol: every engine's knowledge is reached through `get_engine`, and an engine
rigbench has never heard of works once its one module is registered."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from rigbench.client import ChatClient
from rigbench.errors import UsageError
from rigbench.honesty import PreflightInput, ScenarioLength, parse_command, preflight
from rigbench.records import PreflightFinding, ServingCommand
from rigbench.rig import RigFlags
from rigbench.rig._launch_spec import command_for
from rigbench.rig._launcher import launched_rig
from rigbench.rig._rig import LaunchedRig, _crash_hint
from rigbench.rig.engines import (
    ENGINE_NAMES,
    EngineSpec,
    FlagReading,
    FlagSyntax,
    LaunchCommand,
    detect_engine,
    get_adapter,
    get_engine,
    int_flag,
    known_engines,
    register_engine,
    speculative_from_argv,
    unregister_engine,
)
from rigbench.rig.engines._llamacpp import LlamaCppLaunch
from rigbench.rig.engines._sglang import SGLangLaunch, SGLangSpeculative
from rigbench.rig.engines._vllm import VLLMLaunch


def test_every_builtin_engine_is_reached_by_its_name_and_owns_its_spec() -> None:
    assert sorted(e.name for e in known_engines()) == sorted(ENGINE_NAMES)
    for name in ENGINE_NAMES:
        engine = get_engine(name)
        assert engine.name == name and engine.adapter().name == name
        assert engine.launch_spec.model_fields["kind"].default == name
    assert get_engine("llama.cpp") is get_engine("llamacpp")


def test_launch_waits_longer_for_engines_that_compile_at_start(tmp_path: Path) -> None:
    assert get_engine("vllm").start_timeout_s == get_engine("sglang").start_timeout_s == 1800.0
    assert get_engine("llamacpp").start_timeout_s == 300.0
    rig = launched_rig(SGLangLaunch(model="m"), tmp_path / "e.log", engine=get_engine("sglang"))
    assert rig.start_timeout_s == 1800.0 and rig.health_path == "/health"


def test_speculative_facts_are_read_with_the_engines_own_flags() -> None:
    llama = command_for(LlamaCppLaunch(model="m.gguf", draft_model="d.gguf", draft_max=8)).argv
    assert speculative_from_argv(llama, "llamacpp") == {"draft_model": "d.gguf", "type": "draft-simple",
                                                         "draft_max": "8"}
    vllm = command_for(VLLMLaunch(model="m", speculative_config={"method": "ngram",
                                                                 "num_speculative_tokens": 4})).argv
    assert json.loads(speculative_from_argv(vllm, "vllm")["config"])["num_speculative_tokens"] == 4  # type: ignore[index]
    sgl = command_for(SGLangLaunch(model="m", speculative=SGLangSpeculative(algorithm="EAGLE3",
                                                                            num_draft_tokens=4))).argv
    assert speculative_from_argv(sgl, "sglang") == {"algorithm": "EAGLE3", "num_draft_tokens": "4"}
    assert speculative_from_argv(command_for(LlamaCppLaunch(model="m.gguf")).argv, "llamacpp") is None
    # another engine's spelling is not that engine's fact...
    assert speculative_from_argv(["vllm", "serve", "m", "-md", "d"], "vllm") is None
    # ...but a command whose engine is unknown is read with every engine's spellings
    assert speculative_from_argv(["./serve.sh", "-md", "d.gguf"], "unknown") == {"draft_model": "d.gguf"}


def test_only_llamacpp_explains_a_cpu_crash() -> None:
    log = "load_tensors: AMX model buffer size = 1.0 MiB\n"
    assert "AMX" in _crash_hint(get_engine("llamacpp"), -11, log)
    assert _crash_hint(get_engine("vllm"), -11, log) == ""
    assert _crash_hint(None, -11, log) == ""  # a verbatim command whose engine never said


# -- a fake engine, registered as a plugin would be: no edit anywhere else in rigbench ----------


class ToyLaunch(EngineSpec):
    kind: Literal["toy"] = "toy"
    model: str
    depth: int | None = None


class ToyAdapter:
    name = "toy"
    health_path = "/ready"
    metrics_path: str | None = None
    forced_length_exact = False

    def __init__(self) -> None:
        self.metric_names: dict[str, str] = {}
        self.per_position_metric: str | None = None
        self.reports_usage = False
        self.tokenize_unidentified = False
        self.extra_gauges: dict[str, str] = {}

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        return {"engine": self.name}

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        return None

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None:
        return None

    async def count_chat_tokens(self, client: ChatClient, model: str,
                                messages: list[dict[str, Any]]) -> int | None:
        return None

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        return {"max_tokens": max_tokens}

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        return {}


class ToyEngine:
    name = "toy"
    aliases = ("toy-server",)
    launch_spec = ToyLaunch
    default_port = 7070
    start_timeout_s = 42.0
    death_signal = signal.SIGTERM
    speculative_flags = MappingProxyType({"--lookahead": "draft_max"})

    def adapter(self) -> ToyAdapter:
        return ToyAdapter()

    async def identify(self, client: ChatClient) -> bool:
        status, body = await client.get_json(client.server_root + "/toy/about", timeout_s=5)
        return status == 200 and isinstance(body, dict) and body.get("toy") is True

    def command(self, spec: ToyLaunch) -> LaunchCommand:
        argv = ["toy-server", spec.model, "--port", str(spec.port or self.default_port)]
        if spec.depth is not None:
            argv += ["--lookahead", str(spec.depth)]
        return LaunchCommand(argv, {"TOY_HOST": spec.host})

    def open(self, spec: ToyLaunch, log_path: Path, *, api_key: str | None, note: Callable[[str], None],
             build_progress: Any) -> LaunchedRig:
        return launched_rig(spec, log_path, engine=self, api_key=api_key)

    def setup(self, flags: RigFlags, note: Callable[[str], None],
              progress: Callable[[int, int | None, str], None]) -> None:
        return None  # started by the user or by a plan rig: nothing of rigbench's to prepare

    def rig_from_run_flags(self, flags: RigFlags) -> None:
        return None

    def crash_hint(self, exit_code: int | None, log_text: str) -> str:
        return "\n  cause: the toy ran out of batteries" if "battery" in log_text else ""

    flag_syntax = FlagSyntax(markers=("toy-server",), programs=("toy-server",), bare=frozenset({"--fast"}),
                             aliases=MappingProxyType({"-n": "--slots"}), model_positional=True)
    context_overrun_note = " The toy wraps around past its window."
    context_fix = "toy-server --window"
    prefix_cache_reset = "toy-server POST /forget"
    model_stop_fix = ""
    display_name = "Toy"

    def slots_fix(self, slots: int) -> str:
        return f"toy-server --slots {slots}"

    def kv_accounting(self, settings: Mapping[str, int]) -> None:
        return None

    def preflight_rules(self, cmd: ServingCommand, given: PreflightInput) -> list[PreflightFinding]:
        if "--fast" not in cmd.options:
            return []
        return [PreflightFinding(id="toy_fast", severity="warn", problem="--fast skips half the layers",
                                 evidence="--fast", fix="drop --fast")]

    def served_context(self, options: Mapping[str, str | bool]) -> FlagReading:
        v = int_flag(options, "--window")
        return FlagReading(v, f"--window {v}")

    def flag_slots(self, options: Mapping[str, str | bool]) -> FlagReading:
        v = int_flag(options, "--slots")
        return FlagReading(v, f"--slots {v}")

    def stop_strings(self, options: Mapping[str, str | bool]) -> list[str]:
        return [str(options["--halt"])] if isinstance(options.get("--halt"), str) else []


@pytest.fixture
def toy() -> Iterator[ToyEngine]:
    engine = ToyEngine()
    register_engine(engine)
    try:
        yield engine
    finally:
        unregister_engine("toy")


def test_a_registered_engine_launches_through_the_protocol_only(toy: ToyEngine, tmp_path: Path) -> None:
    assert get_engine("Toy-Server") is toy and get_adapter("toy").health_path == "/ready"
    assert command_for(ToyLaunch(model="m", port=1, depth=3)) == LaunchCommand(
        ["toy-server", "m", "--port", "1", "--lookahead", "3"], {"TOY_HOST": "127.0.0.1"})
    rig = launched_rig(ToyLaunch(model="m", depth=3), tmp_path / "e.log", engine=toy)
    assert isinstance(rig, LaunchedRig) and rig.engine == "toy"
    assert rig.health_path == "/ready" and rig.start_timeout_s == 42.0
    assert rig.argv[rig.argv.index("--port") + 1] == str(rig.port)  # a free port, not the default
    assert rig.process._env == {"TOY_HOST": "127.0.0.1"}  # the engine's environment reaches the process
    assert speculative_from_argv(rig.argv, "toy") == {"draft_max": "3"}
    assert "batteries" in _crash_hint(toy, 1, "no battery left")


def test_open_rig_asks_the_specs_engine(toy: ToyEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`rigbench.rig.open_rig` names no engine: the spec's engine opens it, with the run's log, key and
    progress; the embedded rig is llama.cpp's to open."""
    from rigbench.rig import EmbeddedRig, open_rig

    seen: list[tuple[Any, ...]] = []

    def toy_open(spec: Any, log_path: Path, **kw: Any) -> LaunchedRig:
        seen.append((spec, log_path, kw["api_key"], kw["build_progress"]))
        return launched_rig(spec, log_path, engine=toy, api_key=kw["api_key"])

    monkeypatch.setattr(toy, "open", toy_open)
    rig = open_rig(ToyLaunch(model="m"), tmp_path / "e.log", api_key="k", build_progress="progress")
    assert seen == [(ToyLaunch(model="m"), tmp_path / "e.log", "k", "progress")] and rig.engine == "toy"
    opened: list[Any] = []
    monkeypatch.setattr(get_engine("llamacpp"), "open", lambda spec, log_path, **kw: opened.append(spec) or rig)
    assert open_rig(EmbeddedRig(threads=2), tmp_path / "e.log") is rig and opened == [EmbeddedRig(threads=2)]


def test_a_registered_engine_gets_its_own_and_the_generic_preflight_rules(toy: ToyEngine) -> None:
    given = PreflightInput(concurrency=[8], scenarios=[ScenarioLength(name="long", input_tokens=900,
                                                                      output_tokens=200)])
    report = preflight("toy-server my-model --fast --window 1024 -n 4 --halt '<|eom|>'", given)
    cmd = report.command
    assert cmd is not None and (cmd.engine, cmd.model) == ("toy", "my-model")
    assert cmd.options == {"--fast": True, "--window": "1024", "--slots": "4", "--halt": "<|eom|>"}
    by_id = {f.id: f for f in report.findings}
    assert set(by_id) == {"toy_fast", "stop_splits_turn", "scenario_over_context", "concurrency_over_slots"}
    assert "--window 1024" in by_id["scenario_over_context"].evidence
    assert by_id["scenario_over_context"].problem.endswith("The toy wraps around past its window.")
    assert "toy-server --window" in by_id["scenario_over_context"].fix  # its own way to raise the context
    assert "4 slots (--slots 4)" in by_id["concurrency_over_slots"].evidence
    assert by_id["concurrency_over_slots"].fix.startswith("toy-server --slots 8, ")  # its own, not llama.cpp's
    # the toy's stop flag is read on every command line, as the built-ins' are
    assert "stop_splits_turn" in {f.id for f in preflight("vllm serve m --halt '<|eom|>'").findings}


def test_the_prefix_cache_remedy_says_how_each_engine_clears_its_cache(toy: ToyEngine) -> None:
    from rigbench.honesty._prefix_cache import remedy

    assert "toy-server POST /forget" in remedy()
    assert "POST /reset_prefix_cache" in remedy()  # a built-in's, alongside
    unregister_engine("toy")
    try:
        assert "/forget" not in remedy()
    finally:
        register_engine(toy)


def test_a_command_read_for_an_engine_that_is_gone_gets_the_generic_rules_only(toy: ToyEngine) -> None:
    cmd = parse_command("toy-server m --fast")
    unregister_engine("toy")
    try:
        report = preflight(cmd, PreflightInput(stop=["<|eom|>"]))
        assert [f.id for f in report.findings] == ["stop_splits_turn"]
    finally:
        register_engine(toy)  # the fixture unregisters it


async def test_an_attached_server_is_identified_as_the_registered_engine(toy: ToyEngine) -> None:
    async def about(request: web.Request) -> web.Response:
        return web.json_response({"toy": True})

    async def root(request: web.Request) -> web.Response:
        return web.Response(text="toy")

    app = web.Application()
    app.router.add_get("/toy/about", about)
    app.router.add_get("/", root)
    server = TestServer(app)
    await server.start_server()
    client = ChatClient(f"http://127.0.0.1:{server.port}/v1")
    try:
        assert await detect_engine(client) == "toy"
        unregister_engine("toy")
        assert await detect_engine(client) == "unknown"  # the built-ins' probes all miss
    finally:
        register_engine(toy)  # the fixture unregisters it
        await client.aclose()
        await server.close()


def test_a_registered_engine_cannot_take_a_builtin_name(toy: ToyEngine) -> None:
    class Clash(ToyEngine):
        name = "other"
        aliases = ("llama.cpp",)

    with pytest.raises(UsageError, match=r"llama\.cpp already names an engine"):
        register_engine(Clash())
    with pytest.raises(UsageError, match="built into rigbench"):
        unregister_engine("vllm")


# -- one llama.cpp command line for the embedded rig and launched specs ---------------------------


def test_embedded_argv_is_the_one_it_has_always_recorded() -> None:
    """The fingerprint stores this argv; `rigbench compare` against older runs lists any change."""
    from rigbench.rig.engines._llamacpp._embedded import LlamaCppConfig, llamacpp_argv

    cfg = LlamaCppConfig(slots=2, threads=3, spec_type="draft-simple", draft_max=6, spec_synth_len=0.5,
                         extra_args=["-fa", "on"])
    assert llamacpp_argv(Path("/bin/llama-server"), Path("/m/smol.gguf"), 8123, cfg, Path("/d.gguf")) == [
        "/bin/llama-server", "-m", "/m/smol.gguf", "--host", "127.0.0.1", "--port", "8123", "-c", "8192",
        "-np", "2", "--kv-unified", "--jinja", "--metrics", "--no-webui", "--alias", "smol", "-t", "3",
        "-md", "/d.gguf", "--spec-type", "draft-simple", "--spec-draft-n-max", "6", "--spec-synth-len", "0.5",
        "-fa", "on"]
    # no draft model: no speculative flags at all, even with a kind and depth set
    no_draft = llamacpp_argv(Path("s"), Path("m.gguf"), 1, LlamaCppConfig(threads=1, spec_type="x", draft_max=4),
                             None)
    assert not {"--spec-type", "--spec-draft-n-max", "-md"} & set(no_draft)


def test_a_launched_llamacpp_spec_and_the_embedded_rig_share_one_builder() -> None:
    from rigbench.rig.engines._llamacpp._embedded import LlamaCppConfig, llamacpp_argv

    embedded = llamacpp_argv(Path("llama-server"), Path("m.gguf"), 8080,
                             LlamaCppConfig(slots=2, threads=2, draft_max=4), Path("d.gguf"))
    launched = command_for(LlamaCppLaunch(model="m.gguf", port=8080, alias="m", ctx_size=8192, parallel=2,
                                          draft_model="d.gguf", draft_max=4)).argv
    # the embedded rig adds only its own choices (shared KV pool, no web UI, threads) to the same line
    t = embedded.index("-t")
    assert embedded[t + 1] == "2"
    assert [a for a in embedded[:t] + embedded[t + 2:] if a not in ("--kv-unified", "--no-webui")] == launched


def test_an_engine_missing_a_protocol_member_is_refused_naming_it() -> None:
    # adversary: an engine written before death_signal joined the protocol would have failed only when a
    # launched rig spawned it (rigbench once read it with getattr and a fallback)
    members = {k: v for k, v in vars(ToyEngine).items() if not k.startswith("__") and k != "death_signal"}
    engine = type("ToyWithoutDeathSignal", (), members)()
    with pytest.raises(UsageError, match=r"cannot register engine 'toy': it lacks death_signal \(every member"):
        register_engine(engine)
    assert "toy" not in {e.name for e in known_engines()}


def test_an_engine_whose_adapter_misses_a_fact_is_refused_naming_it() -> None:
    # adversary: an adapter written before tokenize_unidentified existed would have broken the traffic
    # check of every unidentified server, mid-run, once registered
    class OldAdapter(ToyAdapter):
        def __init__(self) -> None:
            super().__init__()
            del self.tokenize_unidentified

    class OldEngine(ToyEngine):
        def adapter(self) -> ToyAdapter:
            return OldAdapter()

    with pytest.raises(UsageError, match=r"cannot register engine 'toy': its adapter lacks tokenize_unidentified"):
        register_engine(OldEngine())
    assert "toy" not in {e.name for e in known_engines()}


def test_a_registered_engine_dies_with_its_own_signal(toy: ToyEngine, tmp_path: Path) -> None:
    from rigbench.rig._rig import engine_death_signal

    toy.death_signal = signal.SIGINT  # type: ignore[misc]
    assert engine_death_signal(toy) == signal.SIGINT
    # an engine configured through its environment (the toy's command sets TOY_HOST) gets its own
    # process object: it must keep the engine's signal, not fall back to the default
    rig = toy.open(ToyLaunch(model="m"), tmp_path / "engine.log", api_key=None, note=lambda m: None,
                   build_progress=None)
    assert rig.process is not None and rig.process.death_signal == signal.SIGINT
    assert engine_death_signal(get_engine("llamacpp")) == signal.SIGKILL  # it can hang in its SIGTERM handler
    assert engine_death_signal(get_engine("vllm")) == engine_death_signal(None) == signal.SIGTERM


def test_the_traffic_check_counts_tokens_with_the_identified_engines_own_tokenizer(toy: ToyEngine) -> None:
    # honesty/_traffic.py names no engine: a registered engine's tokenize is used for its server, and a
    # server identified as no engine gets only the bodies of adapters that say `tokenize_unidentified`
    import asyncio

    from rigbench.honesty import count_text_tokens
    from rigbench.testing import Emulator, EmulatorScript

    async def counted(engine: str) -> int | None:
        async with Emulator(EmulatorScript()) as emu, ChatClient(emu.url) as client:
            return await count_text_tokens(client, engine, "one two three")

    async def toy_tokenize(self: ToyAdapter, client: ChatClient, text: str) -> list[int]:
        return [7] * len(text.split())

    # the emulator answers any engine's /tokenize body: a count here would come from another engine's
    assert asyncio.run(counted("toy")) is None
    own = ToyAdapter.tokenize
    ToyAdapter.tokenize = toy_tokenize  # type: ignore[method-assign]
    try:
        assert asyncio.run(counted("toy")) == 3
    finally:
        ToyAdapter.tokenize = own  # type: ignore[method-assign]
    assert (asyncio.run(counted("unknown")) or 0) > 0  # an unidentified server: llama.cpp's, then vLLM's body


def test_each_launch_spec_says_the_model_name_its_requests_use(toy: ToyEngine, tmp_path: Path) -> None:
    from rigbench.rig.engines._llamacpp import LlamaCppLaunch
    from rigbench.rig.engines._ollama import OllamaLaunch
    from rigbench.rig.engines._sglang import SGLangLaunch

    rigs = [launched_rig(s, tmp_path / "e.log", engine=get_engine(s.kind)) for s in (
        OllamaLaunch(model="qwen3:8b"), LlamaCppLaunch(model="m.gguf", alias="smol"),
        SGLangLaunch(model="org/m", served_model_name="s"), SGLangLaunch(model="org/m"), ToyLaunch(model="t"))]
    assert [r.served_name for r in rigs] == ["qwen3:8b", "smol", "s", None, None]

    class NamedToy(ToyLaunch):  # an engine from outside says its own, whatever its field is called
        @property
        def served_name(self) -> str | None:
            return f"toy/{self.model}"

    assert launched_rig(NamedToy(model="t"), tmp_path / "e.log", engine=toy).served_name == "toy/t"


def test_the_rig_code_is_handed_its_engine_and_looks_none_up(toy: ToyEngine, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The generic rig code imports no engine back (tests/unit/test_layering.py): an engine's spec is launched
    with the engine handed in, and a server is told apart only among the candidates it is given."""
    import asyncio

    from rigbench.rig import AttachedRig
    from rigbench.testing import Emulator, EmulatorScript

    with pytest.raises(TypeError, match=r"pass the engine that launches it \(engine=self in Engine.open"):
        launched_rig(SGLangLaunch(model="m"), tmp_path / "e.log", engine=None)

    async def says_toy(client: ChatClient) -> bool:
        return True

    monkeypatch.setattr(toy, "identify", says_toy)  # registered, and claims any server

    async def attached(candidates: tuple[Any, ...]) -> tuple[str, bool | None]:
        async with Emulator(EmulatorScript()) as emu:
            rig = AttachedRig(emu.url, model=None, candidates=candidates)
            await rig.start()
            try:
                return rig.info().engine, rig.fingerprint().reports_usage
            finally:
                await rig.stop()

    assert asyncio.run(attached((toy,))) == ("toy", False)  # the toy adapter's reports_usage
    assert asyncio.run(attached(())) == ("unknown", None)  # not handed the toy: nothing is looked up behind it
