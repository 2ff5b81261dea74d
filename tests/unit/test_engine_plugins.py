"""Engines plug in from outside: an installed package's `rigbench.engines` entry point is an engine the CLI
(`--engine NAME`), plan files (`launch: {kind: NAME}`) and every process that reads the registry find,
with no code in rigbench (issue 24, item 3).

The package is tests/fixtures/plugin_engine (the reference emulator launched as a process), installed
for real into a directory that only the rigbench subprocesses here have on their PYTHONPATH. A broken
package (an import error, a protocol member missing, a built-in's name) is left out with one message
naming it; the built-ins are unaffected and nothing prints a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from rigbench.plan import read_plan_index
from rigbench.rig.engines import known_engines
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.plugin_install import DIST, env_with, install_plugin, write_dist

FAST = ["--suite", "speed", "--scenarios", "chat_short", "--repetitions", "2", "--warmup", "0", "--no-sanity",
        "--allow-untrusted"]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_plugin(tmp_path_factory.mktemp("plugin") / "site")


def rigbench(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def _only_dir(out: Path) -> Path:
    (d,) = [p for p in out.iterdir() if p.is_dir()]
    return d


def _no_traceback(res: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in res.stdout + res.stderr, res.stderr[-3000:]


def test_rigbench_run_launches_an_installed_engine_by_name(plugin: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    res = rigbench("run", "--engine", "emulator", "--model", "plugged-in", *FAST, "--out", str(out),
                   env=env_with(plugin))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    _no_traceback(res)
    run = RunReader(_only_dir(out))
    fp = run.header.fingerprint
    assert fp is not None and fp.argv is not None
    assert fp.mode == "launched" and fp.engine == "emulator" and fp.engine_version == "reference"
    assert fp.argv[:3] == [sys.executable, "-m", "rigbench.testing"]  # the engine's own command
    assert fp.model.served_name == "plugged-in"  # --model reached the engine's spec
    assert run.header.plan["rig"]["engine"] == "emulator"
    speed = run.records("speed_request")
    assert len(speed) == 2 and all(r.result.ok for r in speed)  # type: ignore[attr-defined]


def test_without_the_package_the_engine_is_unknown(tmp_path: Path) -> None:
    """The control: the same command where the package is not installed."""
    res = rigbench("run", "--engine", "emulator", *FAST, "--out", str(tmp_path / "runs"), env=env_with())
    assert res.returncode == 2 and "unknown engine 'emulator'" in res.stderr, res.stderr[-3000:]
    assert "install a package that declares one" in res.stderr
    _no_traceback(res)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


PLAN = """\
name: plugin
sanity: false
speed: {scenarios: [chat_short], repetitions: 2, warmup: 0}
rigs:
  - name: emu
    launch:
      kind: emulator
      script: {model: from-a-plan, output_tokens: 24}
"""


def test_a_plan_file_launches_an_installed_engine(plugin: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    res = rigbench("run", str(plan), "--out", str(tmp_path / "out"), "--allow-untrusted", env=env_with(plugin))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    plan_dir = _only_dir(tmp_path / "out")
    (entry,) = read_plan_index(plan_dir).rigs
    assert (entry.kind, entry.status, entry.error) == ("emulator", "complete", None)
    run = RunReader(plan_dir / str(entry.run_dir))
    assert run.header.fingerprint is not None and run.header.fingerprint.model.served_name == "from-a-plan"
    assert all(r.result.completion_tokens == 24 for r in run.records("speed_request"))  # type: ignore[attr-defined]


def test_the_package_is_not_left_installed_here() -> None:
    """Only the subprocesses above had it: the shared venv and this process do not."""
    with pytest.raises(PackageNotFoundError):
        distribution(DIST)
    assert "emulator" not in {e.name for e in known_engines()}


# -- broken packages: left out, one message naming each, the built-ins unaffected -------------------

_ENGINE_LACKING = """\
    class Half:
        name = "halfdone"
        aliases = ()

    ENGINE = Half()
"""


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("broken") / "site"
    write_dist(site, "needs-torch-engine", "needs_torch_engine",
               'import torch_that_is_not_there\nENGINE = None\n', {"torchy": "needs_torch_engine:ENGINE"})
    write_dist(site, "half-engine", "half_engine", _ENGINE_LACKING, {"halfdone": "half_engine:ENGINE"})
    # a package that claims a built-in's name with an otherwise complete engine (the built-in's own object)
    write_dist(site, "shadow-engine", "shadow_engine",
               "from rigbench.rig.engines._vllm import VLLM as ENGINE\n", {"vllm": "shadow_engine:ENGINE"})
    return site


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    with EmulatorProcess(EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=8)) as e:
        yield e


def test_broken_packages_are_named_and_a_run_of_a_built_in_path_still_works(
        broken: Path, emu: EmulatorProcess, tmp_path: Path) -> None:
    res = rigbench("run", "--endpoint", emu.url, *FAST, "--out", str(tmp_path / "runs"), env=env_with(broken))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    _no_traceback(res)
    err = " ".join(res.stderr.split())
    assert ("the engine 'torchy' of the package needs-torch-engine 0.1 (entry point rigbench.engines: "
            "needs_torch_engine:ENGINE) is left out: importing needs_torch_engine:ENGINE failed: "
            "ModuleNotFoundError: No module named 'torch_that_is_not_there'") in err
    assert "the engine 'halfdone' of the package half-engine 0.1" in err and "it lacks adapter, command" in err
    assert ("the engine 'vllm' of the package shadow-engine 0.1 (entry point rigbench.engines: shadow_engine:ENGINE) "
            "is left out: vllm already names an engine or a launch kind (of rigbench)") in err
    assert err.count("rigbench's own engines are unaffected") == 3
    assert RunReader(_only_dir(tmp_path / "runs")).header.status == "complete"


def test_asking_for_a_broken_engine_names_its_package(broken: Path, tmp_path: Path) -> None:
    res = rigbench("run", "--engine", "torchy", *FAST, "--out", str(tmp_path / "runs"), env=env_with(broken))
    assert res.returncode == 2, res.stderr[-3000:]
    _no_traceback(res)
    error = " ".join(res.stderr.split()).split("error: ", 1)[-1]  # after the warnings, the error itself
    assert error.startswith("the engine 'torchy' of the package needs-torch-engine 0.1"), res.stderr
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.replace("kind: emulator", "kind: halfdone"))
    res = rigbench("run", str(plan), "--out", str(tmp_path / "out"), env=env_with(broken))
    assert res.returncode == 2, res.stderr[-3000:]
    _no_traceback(res)
    err = " ".join(res.stderr.split())
    assert "rigs.0.launch.kind: the engine 'halfdone' of the package half-engine 0.1" in err


def test_a_package_cannot_take_a_built_ins_name(broken: Path) -> None:
    code = ("from rigbench.rig.engines import get_engine, engine_source; "
            "import json; print(json.dumps([type(get_engine('vllm')).__module__, engine_source('vllm')]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env_with(broken), timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == ["rigbench.rig.engines._vllm._engine", "rigbench"]


def test_rigbench_setup_asks_the_engine_an_installed_one_too(plugin: Path) -> None:
    res = rigbench("setup", "--engine", "emulator", env=env_with(plugin))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = " ".join(res.stdout.split())
    assert "nothing to fetch or build" in out and "ready: `rigbench run --engine emulator` starts it as it is." in out
    # an engine with nothing of rigbench's to prepare says so, exit 2, no traceback
    res = rigbench("setup", "--engine", "sglang", env=env_with(plugin))
    assert res.returncode == 2 and "`rigbench setup` has nothing to prepare for sglang" in res.stderr, res.stderr
    _no_traceback(res)
