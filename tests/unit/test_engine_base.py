"""BaseEngine / BaseAdapter: an engine writes only what differs, and the rest works (issue 29 item 4).

`MiniEngine` is the whole engine docs/engines.md ("Adding an engine") shows."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from rigbench.client import ChatClient
from rigbench.honesty import parse_command, preflight
from rigbench.records import ServingCommand
from rigbench.rig import RigFlags
from rigbench.rig._rig import LaunchedRig, engine_death_signal
from rigbench.rig.engines import (
    BaseAdapter,
    BaseEngine,
    EngineSpec,
    LaunchCommand,
    PreflightInput,
    builtin_engines,
    get_adapter,
    get_engine,
    register_engine,
    unregister_engine,
)
from rigbench.testing import Emulator, EmulatorScript


class MiniLaunch(EngineSpec):
    kind: Literal["mini"] = "mini"
    model: str


class MiniAdapter(BaseAdapter):
    name = "mini"


class MiniEngine(BaseEngine):
    """All a new engine must write: its name, spec, argv, how it is told apart, its adapter."""

    name = "mini"
    launch_spec = MiniLaunch

    def adapter(self) -> MiniAdapter:
        return MiniAdapter()

    async def identify(self, client: ChatClient) -> bool:  # an endpoint only it has
        status, _ = await client.get_json(client.server_root + "/mini/version", timeout_s=5)
        return status == 200

    def command(self, spec: MiniLaunch) -> LaunchCommand:
        return LaunchCommand(["mini-server", spec.model, "--port", str(spec.port)], {})


@pytest.fixture
def mini() -> Iterator[MiniEngine]:
    engine = MiniEngine()
    register_engine(engine)  # the registry's checks: every member of both protocols is there
    try:
        yield engine
    finally:
        unregister_engine("mini")


def test_an_engine_that_writes_only_what_differs_launches_through_the_defaults(mini: MiniEngine, tmp_path: Path) -> None:
    assert get_engine("mini") is mini and mini.display_name == "mini"
    rig = mini.open(MiniLaunch(model="m"), tmp_path / "e.log", api_key=None, note=print, build_progress=None)
    assert isinstance(rig, LaunchedRig) and rig.engine == "mini"
    assert rig.argv == ["mini-server", "m", "--port", str(rig.port)]  # its own command, on a free port
    # any OpenAI-compatible server answers /v1/models once it is up; 5 minutes to get there; SIGTERM
    assert rig.health_path == "/v1/models" and rig.start_timeout_s == 300.0
    assert engine_death_signal(mini) == signal.SIGTERM
    assert mini.setup(RigFlags(), print, lambda *a: None) is None
    assert mini.rig_from_run_flags(RigFlags()) is None  # `rigbench run --engine mini` does not launch it
    assert mini.crash_hint(1, "boom") == "" and mini.slots_fix(4) == "" and mini.kv_accounting({}) is None


def test_the_adapter_defaults_claim_nothing_the_server_has_not_shown(mini: MiniEngine) -> None:
    adapter = get_adapter("mini")
    # no forced length: max_tokens only caps, so a run counts the tokens actually produced
    assert adapter.forced_length_fields(64) == {"max_tokens": 64} and adapter.forced_length_exact is False
    assert adapter.metrics_path is None and adapter.metric_names == {} and adapter.per_position_metric is None
    assert adapter.tokenize_unidentified is False and dict(adapter.extra_gauges) == {}
    assert adapter.reasoning_fields(None) == {} and adapter.reasoning_fields("none") == {"reasoning_effort": "none"}


async def test_the_default_server_info_reads_the_model_from_v1_models_and_no_version(mini: MiniEngine) -> None:
    script = EmulatorScript(model="mini-model")
    async with Emulator(script) as emu, ChatClient(emu.url) as client:
        info = await mini.adapter().server_info(client)
        assert (info["engine"], info["version"], info["model"]) == ("mini", None, "mini-model")
        assert await mini.adapter().tokenize(client, "one two") is None  # no endpoint assumed
        assert not await mini.identify(client)  # the emulator is not it


def test_the_default_command_line_rules_are_the_generic_ones_only(mini: MiniEngine) -> None:
    cmd = ServingCommand(argv=["mini-server", "m"], options={}, engine="mini")
    assert mini.preflight_rules(cmd, PreflightInput()) == []
    assert mini.served_context({}).value is None and mini.flag_slots({}).value is None
    assert mini.stop_strings({"--stop": "x"}) == []
    # its default syntax has no markers: no command line is read as the mini engine's
    assert parse_command("mini-server m").engine == "unknown"
    assert preflight(cmd).findings == preflight(cmd.model_copy(update={"engine": "unknown"})).findings


@pytest.mark.parametrize("missing", ["name", "launch_spec", "adapter", "identify", "command"])
def test_an_engine_missing_a_required_member_cannot_be_made(missing: str) -> None:
    members: dict[str, Any] = {k: v for k, v in vars(MiniEngine).items() if not k.startswith("__")}
    del members[missing]
    half = type("Half", (BaseEngine,), members)
    with pytest.raises(TypeError, match=missing):
        half()  # at import of its module, not mid-run


def test_an_adapter_must_name_its_engine() -> None:
    with pytest.raises(TypeError, match="name"):
        type("Nameless", (BaseAdapter,), {})()


def test_every_builtin_engine_writes_on_the_base() -> None:
    for engine in builtin_engines():
        assert isinstance(engine, BaseEngine) and isinstance(engine.adapter(), BaseAdapter), engine.name
