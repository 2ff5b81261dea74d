"""An engine from an installed package, run on a Ray worker (issue 24, item 3): the plan names the
package's engine, the rig is placed on a node whose Python has the package (the same PYTHONPATH
entry a driver has: tests/plugin_install.py), and the worker finds the engine through the
`rigbench.engines` entry point with no code in rigbench or in the task."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.needs import missing_module

if importlib.util.find_spec("ray") is None:  # found, not imported: Ray reads its auth settings on import
    missing_module("the Ray extra is not installed: pip install 'rigbench[ray]'")

from rigbench.plan import read_plan_index
from rigbench.scale._loopback import LoopbackCluster, LoopbackNode
from rigbench.store import RunReader
from tests.plugin_install import env_with, install_plugin
from tests.scale.conftest import node_with

PLAN = """\
name: plugin-on-ray
sanity: false
speed: {scenarios: [chat_short], repetitions: 2, warmup: 0}
rigs:
  - name: emu
    launch: {kind: emulator, script: {model: on-a-worker, output_tokens: 16}}
    resources: {custom: {plugin_node: 1}}
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_plugin(tmp_path_factory.mktemp("plugin") / "site")


@pytest.fixture(scope="module")
def plugin_node(cluster: LoopbackCluster, plugin: Path) -> Iterator[LoopbackNode]:
    """A node of the session's cluster whose processes have the package on their PYTHONPATH. It stays until
    the cluster stops with the session: a node killed here would still be offered to the next module's
    actors for the seconds Ray takes to declare it dead."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", env_with(plugin)["PYTHONPATH"])  # read by `ray start` for this node only
        node = cluster.add_node({"plugin_node": 1}, {"zone": "plugin"})
    yield node


def test_a_plan_naming_an_installed_engine_runs_on_a_ray_worker(
        cluster: LoopbackCluster, ray_driver: Any, plugin: Path, plugin_node: LoopbackNode, tmp_path: Path) -> None:
    cluster.wait_for_nodes(ray_driver, 4)
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    res = subprocess.run([sys.executable, "-m", "rigbench", "run", str(plan), "--ray", cluster.address, "--out",
                          str(tmp_path / "out"), "--allow-untrusted"], capture_output=True, text=True,
                         env=env_with(plugin), timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (plan_dir,) = [d for d in (tmp_path / "out").iterdir() if d.is_dir()]
    (entry,) = read_plan_index(plan_dir).rigs
    assert (entry.kind, entry.status, entry.error) == ("emulator", "complete", None)
    run = RunReader(plan_dir / str(entry.run_dir))
    fp = run.header.fingerprint
    assert fp is not None and fp.engine == "emulator" and fp.model.served_name == "on-a-worker"
    speed = run.records("speed_request")
    assert len(speed) == 2 and all(r.result.ok and r.result.completion_tokens == 16 for r in speed)  # type: ignore[attr-defined]
    placed = json.loads((plan_dir / "ray.json").read_text())
    assert placed["emu"][0]["node_id"] == node_with(ray_driver, "plugin_node")  # the node with the package


def test_a_node_without_the_package_fails_the_rig_naming_the_package(
        cluster: LoopbackCluster, ray_driver: Any, plugin: Path, tmp_path: Path) -> None:
    """The adversary: the rig placed where the package is not installed (the `gpu_a` node)."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.replace("plugin_node: 1", "gpu_a: 1"))
    res = subprocess.run([sys.executable, "-m", "rigbench", "run", str(plan), "--ray", cluster.address, "--out",
                          str(tmp_path / "out"), "--allow-untrusted"], capture_output=True, text=True,
                         env=env_with(plugin), timeout=300)
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    (plan_dir,) = [d for d in (tmp_path / "out").iterdir() if d.is_dir()]
    (entry,) = read_plan_index(plan_dir).rigs
    assert entry.status == "failed" and entry.error is not None
    assert "No module named 'rigbench_emulator_engine'" in entry.error
    assert "the package of its engine 'emulator', rigbench-emulator-engine 0.1.0, which this driver has" in entry.error
