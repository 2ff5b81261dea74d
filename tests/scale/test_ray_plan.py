"""A plan across a Ray cluster: placement by resources, the same results as on one machine, and a node
killed mid-rig losing nothing that reached the driver, the resume finishing it without duplicates."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.needs import missing_module

if importlib.util.find_spec("ray") is None:  # found, not imported: Ray reads its auth settings on import
    missing_module("the Ray extra is not installed: pip install 'rigbench[ray]'")

from rigbench.plan import read_plan_index
from rigbench.scale._loopback import LoopbackCluster
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.scale.conftest import node_with


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    with EmulatorProcess(EmulatorScript(ttft=Delay(mean_ms=20), itl=Delay(mean_ms=4))) as e:
        yield e


def _cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True,
                          timeout=timeout, env=_env())


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "COLUMNS": "200", "RAY_USAGE_STATS_ENABLED": "0"}


def _plan(path: Path, url: str, *, reps: int, rigs: list[tuple[str, str]]) -> Path:
    lines = [f"  - {{name: {n}, endpoint: {{base_url: '{url}'}}, resources: {{custom: {{{r}: 1}}}}}}"
             for n, r in rigs]
    body = "\n".join(lines)
    path.write_text(f"name: two\nsanity: false\nspeed: {{scenarios: [chat_short], repetitions: {reps}, warmup: 1}}\n"
                    f"rigs:\n{body}\n")
    return path


def _only_dir(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def _index_shape(plan_dir: Path) -> list[dict[str, Any]]:
    idx = read_plan_index(plan_dir)
    return [e.model_dump(exclude={"run_dir", "source_data_id"}) for e in idx.rigs]


def _mask(text: str) -> str:
    # figures, and the significance mark they decide: two rigs on one emulator differ only by noise,
    # so the verdict mark ("(same ±5%)", "(inconclusive, ~N/side)" or none) is timing too
    return re.sub(r" \((same ±#%|inconclusive(, ~#/side)?)\)", "", re.sub(r"[0-9]+(\.[0-9]+)?", "#", text))


def test_each_rig_lands_where_its_resource_is_and_the_plan_matches_a_local_run(
        cluster: LoopbackCluster, ray_driver: Any, emu: EmulatorProcess, tmp_path: Path) -> None:
    plan = _plan(tmp_path / "plan.yaml", emu.url, reps=2, rigs=[("one", "gpu_a"), ("two", "gpu_b")])
    r = _cli("run", str(plan), "--ray", cluster.address, "--out", str(tmp_path / "ray"), "--allow-untrusted")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    ray_dir = _only_dir(tmp_path / "ray")
    placed = json.loads((ray_dir / "ray.json").read_text())
    assert placed["one"][0]["node_id"] == node_with(ray_driver, "gpu_a")
    assert placed["two"][0]["node_id"] == node_with(ray_driver, "gpu_b")
    assert all(p[0]["node_ip"] == "127.0.0.1" for p in placed.values())

    local = _cli("run", str(plan), "--out", str(tmp_path / "local"), "--allow-untrusted")
    assert local.returncode == 0, local.stdout[-3000:] + local.stderr[-3000:]
    local_dir = _only_dir(tmp_path / "local")
    # the index: the same rigs, statuses and verdicts (run ids and data ids differ by nature)
    assert _index_shape(ray_dir) == _index_shape(local_dir)
    from rigbench.cli._plan import plan_analyses
    from rigbench.report._blog import speedup_table

    names_r, an_r, cmp_r = plan_analyses(ray_dir)
    names_l, an_l, cmp_l = plan_analyses(local_dir)
    assert names_r == names_l == ["one", "two"]
    for a, b in zip(an_r, an_l, strict=True):
        assert a.speed is not None and b.speed is not None
        shape = [(x.scenario, x.concurrency, x.requests, x.failed, x.input_tokens_target, x.output_tokens_target)
                 for x in a.speed.rows]
        assert shape == [(x.scenario, x.concurrency, x.requests, x.failed, x.input_tokens_target,
                          x.output_tokens_target) for x in b.speed.rows]
        assert a.header.plan == b.header.plan  # the same settings reached the rig

    def cells(names: list[str], an: list[Any], cmp: list[Any]) -> list[list[str]]:
        t = speedup_table(names, an, cmp)  # the comparison table, cell by cell, figures masked
        return [[_mask(str(col.header))] + [_mask(str(c)) for c in col._cells] for col in t.columns]

    assert cells(names_r, an_r, cmp_r) == cells(names_l, an_l, cmp_l)
    # the plan's own command line is recorded, not the Ray worker's
    run_json = json.loads((ray_dir / read_plan_index(ray_dir).rigs[0].run_dir / "run.json").read_text())  # type: ignore[operator]
    assert "--ray" in run_json["command"]


def test_a_node_killed_mid_rig_keeps_what_was_streamed_and_resume_finishes_without_duplicates(
        cluster: LoopbackCluster, ray_driver: Any, tmp_path: Path) -> None:
    reps = 8
    slow = EmulatorScript(ttft=Delay(mean_ms=30), itl=Delay(mean_ms=12))  # ~0.8 s a request
    with EmulatorProcess(slow) as emu:
        plan = _plan(tmp_path / "plan.yaml", emu.url, reps=reps, rigs=[("victim", "gpu_b")])
        out = tmp_path / "out"
        proc = subprocess.Popen([sys.executable, "-m", "rigbench", "run", str(plan), "--ray", cluster.address,
                                 "--out", str(out), "--allow-untrusted"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=_env())
        try:
            deadline = time.monotonic() + 180
            kept: list[str] = []
            while time.monotonic() < deadline:
                recs = list(out.glob("*/*/records.jsonl"))
                if recs:
                    kept = [ln for ln in recs[0].read_text().splitlines() if '"speed_batch"' in ln]
                    if len(kept) >= 3:  # warm-up + 2 measured batches reached the driver
                        break
                time.sleep(0.1)
            assert len(kept) >= 3, "the rig never got going"
            victim = next(n for n in cluster.nodes if n.resources.get("gpu_b"))
            victim.kill()
            output, _ = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 1, output[-3000:]
        plan_dir = _only_dir(out)
        entry = read_plan_index(plan_dir).rigs[0]
        assert entry.status == "failed" and "was lost" in (entry.error or ""), entry
        assert "--resume" in (entry.error or "")
        run_dir = plan_dir / (entry.run_dir or "")
        lines = (run_dir / "records.jsonl").read_text().splitlines()
        batches_then = [json.loads(ln) for ln in lines if '"speed_batch"' in ln]
        assert [b["unit_id"] for b in batches_then[: len(kept)]] == [json.loads(k)["unit_id"] for k in kept]
        assert len(batches_then) < reps + 1, "the rig finished before the node was killed: kill sooner"

        cluster.add_node({"gpu_b": 1}, {"zone": "b"})  # a replacement node with the resource
        r = _cli("run", str(plan), "--ray", cluster.address, "--resume", str(plan_dir), "--allow-untrusted")
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    entry = read_plan_index(plan_dir).rigs[0]
    assert entry.status == "complete" and entry.run_dir == run_dir.name
    batches = [json.loads(ln) for ln in (run_dir / "records.jsonl").read_text().splitlines() if '"speed_batch"' in ln]
    ids = [b["unit_id"] for b in batches]
    assert len(ids) == len(set(ids)) == reps + 1  # every batch once: none lost, none redone
    assert batches[: len(batches_then)] == batches_then  # what was kept is untouched
    from rigbench.analysis import summarize_speed
    from rigbench.store import RunReader

    speed = summarize_speed(RunReader(run_dir))
    assert speed is not None and [(x.requests, x.failed) for x in speed.rows] == [(reps, 0)]
    placed = json.loads((plan_dir / "ray.json").read_text())["victim"]
    assert len(placed) == 2 and placed[0]["node_id"] != placed[1]["node_id"]  # resumed on the new node


def test_a_rig_asking_for_a_resource_no_node_has_is_refused_naming_it(
        cluster: LoopbackCluster, emu: EmulatorProcess, tmp_path: Path) -> None:
    plan = _plan(tmp_path / "plan.yaml", emu.url, reps=1, rigs=[("one", "gpu_a"), ("big", "H200")])
    r = _cli("run", str(plan), "--ray", cluster.address, "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    err = " ".join(r.stderr.split())
    assert "rig 'big' asks for H200 1, which no node of the Ray cluster has" in err
    assert "gpu_a 1" in err and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was made
