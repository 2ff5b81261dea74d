"""Plan files: validation errors name file, line and key; sweeps expand; plans run rig by rig."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from rigbench.client import ChatClient
from rigbench.errors import UsageError
from rigbench.plan import EmbeddedRig, PlanError, load_plan, run_config_for
from rigbench.plan._index import read_plan_index
from rigbench.rig import EndpointSpec, port_in_use
from rigbench.rig._launch_spec import ContainerLaunch
from rigbench.rig.engines import (
    BaseEngine,
    EngineSpec,
    FlagSyntax,
    LaunchCommand,
    register_engine,
    unregister_engine,
)
from rigbench.rig.engines._vllm import VLLMLaunch
from rigbench.testing import EmulatorScript

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "plan.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def test_examples_load_and_expand() -> None:
    spec = load_plan(EXAMPLES / "spec-decoding-smollm2.yaml")
    assert [r.name for r in spec.rigs] == ["no-drafter", "depth-4", "depth-15"]
    assert [getattr(r.spec, "draft_max", None) for r in spec.rigs] == [None, 4, 15]
    assert spec.rigs[0].spec == EmbeddedRig()
    engines = load_plan(EXAMPLES / "three-engines.yaml")
    assert [r.key()["kind"] for r in engines.rigs] == ["vllm", "sglang", "llamacpp"]


def test_misspelt_key_names_file_line_and_key(tmp_path: Path) -> None:
    p = write(tmp_path, """\
        name: t
        rigs:
          - name: a
            embedded:
              draft_maxx: 4
        """)
    with pytest.raises(PlanError) as e:
        load_plan(p)
    assert f"{p}:5: rigs.0.embedded.draft_maxx: unknown key" in str(e.value)


def test_error_inside_a_launch_union_points_at_the_bad_value(tmp_path: Path) -> None:
    p = write(tmp_path, """\
        name: t
        rigs:
          - name: ok
            embedded: {}
          - name: v
            launch:
              kind: vllm
              model: m
              max_num_seqs: lots
        """)
    with pytest.raises(PlanError) as e:
        load_plan(p)
    # the union's tag ("vllm") is not a key of the file: the path is the file's own keys
    assert f"{p}:9: rigs.1.launch.max_num_seqs: takes a whole number, not text; got 'lots'" in str(e.value)


def test_missing_field_points_at_its_parent(tmp_path: Path) -> None:
    p = write(tmp_path, """\
        name: t
        rigs:
          - name: v
            launch:
              kind: sglang
        """)
    with pytest.raises(PlanError) as e:
        load_plan(p)
    assert f"{p}:4: rigs.0.launch.model: Field required" in str(e.value)


def test_rig_needs_exactly_one_kind_and_unique_names(tmp_path: Path) -> None:
    p = write(tmp_path, """\
        name: t
        rigs:
          - name: a
            embedded: {}
            endpoint: {base_url: "http://h:1/v1"}
        """)
    with pytest.raises(PlanError, match=r":3: rigs\.0: rig 'a' needs exactly one of embedded, launch or endpoint"):
        load_plan(p)
    p = write(tmp_path, """\
        name: t
        rigs:
          - {name: a, embedded: {}}
          - {name: a, embedded: {draft_max: 4}}
        """)
    with pytest.raises(PlanError, match="repeated: a"):
        load_plan(p)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    p = write(tmp_path, "name: t\nrigs:\n  - name: [a\n")
    with pytest.raises(PlanError, match=rf"{p}:\d+ is not valid YAML"):
        load_plan(p)


def test_sweep_product_and_bad_sweep_key(tmp_path: Path) -> None:
    p = write(tmp_path, """\
        name: t
        rigs:
          - name: "d{draft_max}-s{slots}"
            embedded: {draft_model: embedded}
            sweep: {draft_max: [4, 15], slots: [1, 2]}
        """)
    names = [r.name for r in load_plan(p).rigs]
    assert names == ["d4-s1", "d4-s2", "d15-s1", "d15-s2"]
    p = write(tmp_path, """\
        name: t
        rigs:
          - name: x
            embedded: {}
            sweep:
              depth: [4]
        """)
    with pytest.raises(PlanError, match=r":6: rigs\.0\.sweep\.depth: 'depth' is not a setting"):
        load_plan(p)
    p = write(tmp_path, """\
        name: t
        rigs:
          - name: x
            embedded: {}
            sweep:
              draft_max: [0]
        """)
    with pytest.raises(PlanError, match=r"sweep\.draft_max: value \{'draft_max': 0\} is not valid"):
        load_plan(p)


def test_run_config_per_rig_kind(tmp_path: Path) -> None:
    p = write(tmp_path, """\
        name: t
        speed: {scenarios: [chat_short], repetitions: 2, warmup: 0, concurrency: [1, 4]}
        rigs:
          - {name: e, embedded: {draft_model: embedded, draft_max: 4}}
          - {name: v, launch: {kind: vllm, model: m, speculative_config: {method: ngram}}}
          - {name: c, launch: {kind: container, argv: "docker run --rm --name rb x", port: 8000}}
          - {name: a, endpoint: {base_url: "http://h:8000/v1", model: m}}
        """)
    lp = load_plan(p)
    cfgs = [run_config_for(lp.plan, r, tmp_path, run_id=f"id-{r.name}", resume=None) for r in lp.rigs]
    embedded, vllm, container, endpoint = (c.rig for c in cfgs)
    assert isinstance(embedded, EmbeddedRig) and embedded.draft_max == 4 and embedded.slots == 4
    assert cfgs[0].suite_settings["speed"]["repetitions"] == 2
    assert isinstance(vllm, VLLMLaunch)
    assert isinstance(container, ContainerLaunch) and container.container_name == "rb"
    assert isinstance(endpoint, EndpointSpec) and (endpoint.base_url, endpoint.model) == ("http://h:8000/v1", "m")
    assert [c.run_id for c in cfgs] == ["id-e", "id-v", "id-c", "id-a"]


def test_launched_rig_uses_the_specs_argv_and_the_adapters_health_path(tmp_path: Path) -> None:
    from rigbench.rig._launcher import ContainerRig, launched_rig
    from rigbench.rig.engines import get_engine

    rig = launched_rig(VLLMLaunch(model="m", served_model_name="s"), tmp_path / "e.log", engine=get_engine("vllm"))
    assert rig.argv[:3] == ["vllm", "serve", "m"] and rig.health_path == "/health"
    assert rig.argv[rig.argv.index("--port") + 1] == str(rig.port)  # a free port was chosen
    c = launched_rig(ContainerLaunch(argv="docker run --name rb img", port=9), tmp_path / "e.log", engine=None)
    assert isinstance(c, ContainerRig) and c.container_name == "rb" and c.health_path == "/v1/models"
    with pytest.raises(Exception, match="needs `--name NAME`"):
        launched_rig(ContainerLaunch(argv="docker run img", port=9), tmp_path / "e.log", engine=None)


def test_plan_runs_each_rig_against_the_emulator_and_resumes(tmp_path: Path) -> None:
    """A whole plan through `execute_plan`, rigs attached to the reference emulator."""
    import asyncio

    from rigbench.plan import execute_plan
    from rigbench.testing import Emulator

    async def go() -> None:
        async with Emulator() as emu:
            base = emu.url
            p = write(tmp_path, f"""\
                name: emu
                sanity: false
                speed: {{scenarios: [chat_short], repetitions: 2, warmup: 0}}
                rigs:
                  - {{name: one, endpoint: {{base_url: "{base}"}}}}
                  - {{name: two, endpoint: {{base_url: "{base}"}}}}
                  - {{name: dead, endpoint: {{base_url: "http://127.0.0.1:9/v1"}}}}
                """)
            lp = load_plan(p)
            index = await execute_plan(lp, tmp_path / "plan")
            assert [e.status for e in index.rigs] == ["complete", "complete", "failed"]
            assert "cannot reach" in (index.rigs[2].error or "")
            on_disk = read_plan_index(tmp_path / "plan")
            assert on_disk == index
            assert (tmp_path / "plan" / "plan.yaml").read_text() == p.read_text()
            # resume: the complete rigs are not redone
            before = json.loads((tmp_path / "plan" / index.rigs[0].run_dir / "run.json").read_text())  # type: ignore[operator]
            again = await execute_plan(lp, tmp_path / "plan", resume=True)
            after = json.loads((tmp_path / "plan" / again.rigs[0].run_dir / "run.json").read_text())  # type: ignore[operator]
            assert before == after and again.rigs[2].status == "failed"
            # a changed plan cannot resume this directory
            p.write_text(p.read_text().replace("repetitions: 2", "repetitions: 3"))
            with pytest.raises(PlanError, match="configuration changed"):
                await execute_plan(load_plan(p), tmp_path / "plan", resume=True)
            # the directory's own plan copy resolving differently means another rigbench wrote it:
            # the error says so instead of advising to resume with that very copy
            idx = tmp_path / "plan" / "plan.json"
            idx.write_text(idx.read_text().replace(index.config_sha256, "0" * 16))
            with pytest.raises(PlanError, match="written by a rigbench") as e:
                await execute_plan(load_plan(tmp_path / "plan" / "plan.yaml"), tmp_path / "plan", resume=True)
            assert "rigbench report" in str(e.value)

    asyncio.run(go())


def test_an_unknown_suite_in_a_later_rig_is_found_before_the_first_rig_runs(tmp_path: Path) -> None:
    import asyncio

    from rigbench.plan import execute_plan
    from rigbench.testing import Emulator

    async def go() -> None:
        async with Emulator() as emu:
            p = write(tmp_path, f"""\
                name: emu
                sanity: false
                speed: {{scenarios: [chat_short], repetitions: 1, warmup: 0}}
                rigs:
                  - {{name: one, endpoint: {{base_url: "{emu.url}"}}}}
                  - {{name: two, suites: [speed, speeed], endpoint: {{base_url: "{emu.url}"}}}}
                """)
            with pytest.raises(PlanError, match=r"rig 'two': unknown suite 'speeed'"):
                await execute_plan(load_plan(p), tmp_path / "plan")
            assert emu.requests_total == 0 and not (tmp_path / "plan").exists()

    asyncio.run(go())


def test_plan_deadlines_reach_every_run_and_bad_ones_name_the_line(tmp_path: Path) -> None:
    p = write(tmp_path, """\
        name: d
        deadlines: {idle_s: 30, total_s: 120}
        rigs:
          - {name: one, endpoint: {base_url: "http://127.0.0.1:9/v1"}}
        """)
    lp = load_plan(p)
    cfg = run_config_for(lp.plan, lp.rigs[0], tmp_path, run_id="x", resume=None)
    assert (cfg.deadlines.idle_s, cfg.deadlines.total_s) == (30, 120)
    p.write_text(p.read_text().replace("idle_s: 30", "idle_s: -1"))
    with pytest.raises(PlanError, match=r"plan.yaml:2.*idle_s"):
        load_plan(p)


def test_a_container_runtime_failure_is_named_not_unknown_exited_125(tmp_path: Path) -> None:
    import asyncio
    import stat

    from rigbench.errors import RigStartError
    from rigbench.rig import free_port
    from rigbench.rig._launcher import launched_rig

    docker = tmp_path / "docker"  # plays `docker run` failing before any engine starts
    docker.write_text("#!/bin/sh\necho 'Error response from daemon: No such image: img' >&2\nexit 125\n")
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    rig = launched_rig(ContainerLaunch(argv=f"{docker} run --rm --name rb img", port=free_port()), tmp_path / "e.log",
                       engine=None)

    async def go() -> str:
        try:
            await rig.start()
        except RigStartError as e:
            return str(e)
        finally:
            await rig.stop()
        raise AssertionError("the start did not fail")

    msg = asyncio.run(go())
    assert "`docker run` exited with code 125: the container runtime itself failed" in msg
    assert "No such image" in msg and "unknown exited" not in msg


def test_url_credentials_in_a_plan_are_stored_nowhere_in_its_directory(tmp_path: Path) -> None:
    import asyncio

    from rigbench.plan import execute_plan
    from rigbench.testing import Emulator

    async def go() -> None:
        async with Emulator() as emu:
            url = emu.url.replace("http://", "http://bob:hunter2-secret@")
            p = write(tmp_path, f"""\
                name: creds
                sanity: false
                speed: {{scenarios: [chat_short], repetitions: 1, warmup: 0}}
                rigs:
                  - {{name: one, endpoint: {{base_url: "{url}"}}}}
                """)
            index = await execute_plan(load_plan(p), tmp_path / "plan")
            assert [e.status for e in index.rigs] == ["complete"]
            # the stored copy resumes as the same plan
            again = await execute_plan(load_plan(tmp_path / "plan" / "plan.yaml"), tmp_path / "plan", resume=True)
            assert again.rigs[0].status == "complete"

    asyncio.run(go())
    files = [f for f in (tmp_path / "plan").rglob("*") if f.is_file()]
    assert len(files) >= 4
    for f in files:
        assert b"hunter2" not in f.read_bytes() and b"bob" not in f.read_bytes(), f


# -- an engine registered at run time is a plan-file `launch:` kind, with no edit in rigbench -----


class EmulatorLaunch(EngineSpec):
    """The reference emulator as a launchable engine: `python -m rigbench.testing --port N`."""

    kind: Literal["emulator"] = "emulator"
    script: EmulatorScript = EmulatorScript()


class EmulatorAdapter:
    name = "emulator"
    health_path = "/health"
    metrics_path: str | None = None  # its /metrics carries none of the canonical names
    forced_length_exact = False  # it stops at its script's output_tokens, whatever max_tokens asks

    def __init__(self) -> None:
        self.metric_names: dict[str, str] = {}
        self.per_position_metric: str | None = None
        self.reports_usage = False
        self.tokenize_unidentified = False
        self.extra_gauges: dict[str, str] = {}

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        status, body = await client.get_json(client.base_url + "/models", timeout_s=5)
        models = body.get("data", []) if status == 200 and isinstance(body, dict) else []
        return {"engine": self.name, "version": "reference", "context_length": 32768,
                "models": [m.get("id") for m in models if isinstance(m, dict)]}

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        return None

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None:
        return None

    async def count_chat_tokens(self, client: ChatClient, model: str,
                                messages: list[dict[str, Any]]) -> int | None:
        return None

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        return {}

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        return {}


class EmulatorEngine(BaseEngine):
    """The reference emulator as a plan engine: only what differs from BaseEngine's defaults."""

    name = "emulator"
    launch_spec = EmulatorLaunch
    start_timeout_s = 60.0
    flag_syntax = FlagSyntax(markers=("rigbench.testing",), programs=())
    display_name = "the emulator"

    def adapter(self) -> EmulatorAdapter:
        return EmulatorAdapter()

    async def identify(self, client: ChatClient) -> bool:
        status, body = await client.get_json(client.base_url + "/models", timeout_s=5)
        data = body.get("data") if isinstance(body, dict) else None
        return status == 200 and bool(data) and data[0].get("owned_by") == "rigbench-emulator"

    def command(self, spec: EmulatorLaunch) -> LaunchCommand:
        argv = [*(spec.executable or [sys.executable, "-m", "rigbench.testing"]), "--host", spec.host,
                "--port", str(spec.port or self.default_port), "--script-json", spec.script.model_dump_json()]
        return LaunchCommand(argv + list(spec.extra_args), {})


@pytest.fixture
def emulator_engine() -> Iterator[EmulatorEngine]:
    engine = EmulatorEngine()
    register_engine(engine)
    try:
        yield engine
    finally:
        unregister_engine(engine.name)


_EMULATOR_PLAN = """\
    name: plugin
    sanity: false
    speed: {scenarios: [chat_short], repetitions: 2, warmup: 0}
    rigs:
      - name: emu
        launch:
          kind: emulator
          script: {model: plugged-in, output_tokens: 24}
    """


def test_a_plan_cannot_name_an_engine_that_is_not_registered(tmp_path: Path) -> None:
    p = write(tmp_path, _EMULATOR_PLAN)
    with pytest.raises(PlanError) as e:
        load_plan(p)
    msg = str(e.value)
    assert f"{p}:7: rigs.0.launch.kind: unknown launch kind 'emulator'" in msg
    assert "the engines registered now are llamacpp, ollama, sglang, vllm" in msg and "register_engine" in msg
    p.write_text(p.read_text().replace("kind: emulator\n", ""))
    with pytest.raises(PlanError, match=r":6: rigs\.0\.launch\.kind: a launch spec needs a `kind`"):
        load_plan(p)


def test_a_registered_engine_is_a_launch_kind_and_its_spec_errors_name_the_line(
        emulator_engine: EmulatorEngine, tmp_path: Path) -> None:
    lp = load_plan(write(tmp_path, _EMULATOR_PLAN))
    spec = lp.rigs[0].spec
    assert isinstance(spec, EmulatorLaunch) and spec.script.model == "plugged-in"
    bad = write(tmp_path, _EMULATOR_PLAN.replace("output_tokens: 24", "output_tokens: lots"))
    with pytest.raises(PlanError, match=rf"{bad}:8: rigs\.0\.launch\.script\.output_tokens: takes a whole number"):
        load_plan(bad)
    with pytest.raises(PlanError, match=r"unknown launch kind 'emulatr'; the engines registered now are "
                                        r"llamacpp, ollama, sglang, vllm, emulator"):
        load_plan(write(tmp_path, _EMULATOR_PLAN.replace("kind: emulator", "kind: emulatr")))


def test_an_engine_whose_spec_kind_is_not_its_name_is_refused() -> None:
    class Misnamed(EmulatorEngine):
        name = "emulator-two"

    with pytest.raises(UsageError, match=r"must declare `kind: Literal\['emulator-two'\] = 'emulator-two'`"):
        register_engine(Misnamed())

    class Shadowing(EmulatorEngine):
        name = "command"

    with pytest.raises(UsageError, match="command already names an engine or a launch kind"):
        register_engine(Shadowing())


def test_a_plan_launches_a_registered_engine_as_a_real_process_end_to_end(
        emulator_engine: EmulatorEngine, tmp_path: Path) -> None:
    """The emulator, started by rigbench from the plan through the registered engine, measured, stopped."""
    import asyncio

    from rigbench.plan import execute_plan
    from rigbench.store import RunReader

    lp = load_plan(write(tmp_path, _EMULATOR_PLAN))
    index = asyncio.run(execute_plan(lp, tmp_path / "plan"))
    assert [(e.kind, e.status, e.error) for e in index.rigs] == [("emulator", "complete", None)]
    run = RunReader(tmp_path / "plan" / index.rigs[0].run_dir)  # type: ignore[operator]
    fp = run.header.fingerprint
    assert fp is not None and fp.mode == "launched" and fp.engine == "emulator"
    argv = fp.argv
    assert argv is not None and argv[:3] == [sys.executable, "-m", "rigbench.testing"]
    assert fp.engine_version == "reference" and fp.model.served_name == "plugged-in"
    port = int(argv[argv.index("--port") + 1])
    assert port != EmulatorEngine.default_port  # the spec named none: a free one was chosen
    speed = run.records("speed_request")
    assert len(speed) == 2 and all(r.result.ok and r.result.completion_tokens == 24 for r in speed)  # type: ignore[union-attr]
    assert "listening http://127.0.0.1:" in (tmp_path / "plan" / index.rigs[0].run_dir / "engine.log").read_text()  # type: ignore[operator]
    assert not port_in_use(port)  # rigbench stopped the process it started


def test_a_plan_stopped_on_a_busy_host_resumes_with_allow_busy_host_added(tmp_path: Path) -> None:
    """A busy host stops a plan and says: set `allow_busy_host: true` and resume. That key keeps figures, it
    measures nothing: the plan's hash is the same with it, so the resume is not refused. A plan directory
    started with it before (whose index hashed it) still resumes: its hash, computed by rigbench then, is pinned."""
    def plan(extra: str) -> Path:
        p = tmp_path / f"plan{len(extra)}.yaml"
        p.write_text(textwrap.dedent(f"""\
            name: d
            sanity: false
            {extra}
            speed: {{scenarios: [chat_short], repetitions: 2, warmup: 0}}
            rigs:
              - {{name: one, endpoint: {{base_url: "http://127.0.0.1:9/v1"}}}}
            """))
        return p

    started, kept = load_plan(plan("")), load_plan(plan("allow_busy_host: true"))
    assert kept.config_sha256 == started.config_sha256 == "ee15e49c2e0a67b5"
    assert kept.resumes(started.config_sha256)
    assert kept.resumes("d0f57b2e79a5c402")  # hashed with allow_busy_host: true before this change
    assert not kept.resumes("0" * 16) and not load_plan(plan("seed: 7")).resumes(started.config_sha256)
