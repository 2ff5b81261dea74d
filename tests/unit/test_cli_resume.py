"""Resume stays the same run; a dead attached server stops the run (issue 14).

Every run here attaches to the reference emulator in its own process (`EmulatorProcess`), so it
can be killed mid-run and brought back on the same port, as a real server would be.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault
from tests.children import spawned
from tests.unit.cli_inproc import Result, invoke

FAST = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=16)
ARGS = ["--no-sanity", "--allow-untrusted", "--scenarios", "chat_short", "--warmup", "0"]


def rigbench(*args: str) -> Result:
    res = invoke(*args)
    assert res.traceback is None, res.traceback
    return res


def _only_run(out: Path) -> Path:
    (d,) = [p for p in out.iterdir() if p.is_dir()]
    return d


def _interrupt(run_dir: Path, keep_batches: int) -> None:
    """Make a finished run look like one killed after `keep_batches` batches (status running, later lines gone)."""
    rec = run_dir / "records.jsonl"
    lines, kept, batches = rec.read_text().splitlines(keepends=True), [], 0
    for line in lines:
        if batches >= keep_batches and '"speed_' in line:
            continue
        kept.append(line)
        batches += '"speed_batch"' in line
    rec.write_text("".join(kept))
    head = json.loads((run_dir / "run.json").read_text())
    head.update(status="running", finished_at=None, source_data_id=None, trust=None)
    (run_dir / "run.json").write_text(json.dumps(head))


def test_resume_takes_the_header_settings_and_refuses_a_changed_command(tmp_path: Path) -> None:
    with EmulatorProcess(FAST) as emu, EmulatorProcess(FAST.model_copy(update={"model": "other"})) as other:
        out = tmp_path / "runs"
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--repetitions", "3", "--out", str(out))
        assert res.code == 0, res.stderr
        run_dir = _only_run(out)
        before = (run_dir / "records.jsonl").read_bytes(), json.loads((run_dir / "run.json").read_text())

        # complete: a no-op that says so; nothing appended, the source-data id unchanged
        res = rigbench("run", "--resume", str(run_dir), "--allow-untrusted")
        assert res.code == 0 and "already complete" in res.stdout, res.stdout + res.stderr
        assert (run_dir / "records.jsonl").read_bytes() == before[0]
        assert json.loads((run_dir / "run.json").read_text()) == before[1]

        _interrupt(run_dir, keep_batches=1)
        for change, flag, was, now in [
            (["--repetitions", "5"], "--repetitions", "3", "5"),
            (["--endpoint", other.url], "--endpoint", emu.url, other.url),
            (["--model", "other"], "--model", "null", '"other"'),
            (["--suite", "speed,agent"], "--suite", '"speed"', '"speed,agent"'),
            (["--tool-trials", "5"], "--tool-trials", "null", "5"),
            (["--set", "speed.temperature=0.5"], "--set", "null", '["speed.temperature=0.5"]'),
        ]:
            res = rigbench("run", "--resume", str(run_dir), *change)
            assert res.code == 2, (change, res.stdout, res.stderr)
            msg = " ".join(res.stderr.split())
            assert f"cannot resume {run_dir}" in msg and flag in msg and was in msg and now in msg, msg
            assert "Traceback" not in res.stderr
        assert RunReader(run_dir).header.status == "running"  # a refused resume touched nothing

        # nothing on the command line but --resume: the run's own endpoint and settings
        res = rigbench("run", "--resume", str(run_dir), "--allow-untrusted")
        assert res.code == 0, res.stdout + res.stderr
        reader = RunReader(run_dir)
        assert reader.header.status == "complete"
        batches = [r["unit_id"] for r in reader.raw_records("speed_batch")]
        assert sorted(batches) == [f"speed/chat_short/c1/r{i}" for i in range(3)]
        assert reader.header.fingerprint.model.served_name == "emulated-model"  # type: ignore[union-attr]


def test_runner_refuses_a_changed_plan_naming_the_field(tmp_path: Path) -> None:
    """Plans and other callers resume through the runner: it compares the resolved settings itself."""
    import asyncio

    import pytest

    from rigbench.errors import UsageError
    from rigbench.rig import EndpointSpec
    from rigbench.runner import RunConfig, execute_run
    from rigbench.suites import SuiteSettings
    from rigbench.suites.speed import SpeedSettings

    with EmulatorProcess(FAST) as emu:
        speed = SpeedSettings(scenarios=["chat_short"], repetitions=2, warmup=0)
        cfg = RunConfig(suite_names=["speed"], settings=SuiteSettings(speed=speed), out_dir=tmp_path,
                        rig=EndpointSpec(base_url=emu.url), sanity=False)
        header = asyncio.run(execute_run(cfg))
        run_dir = tmp_path / header.run_id
        _interrupt(run_dir, keep_batches=1)
        cfg2 = RunConfig(suite_names=["speed"], out_dir=tmp_path, rig=EndpointSpec(base_url=emu.url), sanity=False,
                         resume=run_dir,
                         settings=SuiteSettings(speed=speed.model_copy(update={"concurrency": [2]})))
        with pytest.raises(UsageError, match=r"changes suites\.speed\.concurrency from \[1\] to \[2\]"):
            asyncio.run(execute_run(cfg2))


def test_failed_units_are_retried_on_resume_and_kept_as_history(tmp_path: Path) -> None:
    failing = FAST.model_copy(update={"faults": [Fault(kind="http_status", status=503, every=2, offset=1)]})
    out = tmp_path / "runs"
    with EmulatorProcess(failing) as emu:
        port = emu.port
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--repetitions", "4", "--out", str(out))
        assert res.code == 0, res.stderr
    run_dir = _only_run(out)
    failed_before = [r for r in RunReader(run_dir).raw_records("speed_request") if r["result"]["error"]]
    assert len(failed_before) == 2
    _interrupt(run_dir, keep_batches=4)  # same records, status back to "running": as if killed at the end
    with EmulatorProcess(FAST, port=port):
        res = rigbench("run", "--resume", str(run_dir), "--allow-untrusted")
        assert res.code == 0, res.stdout + res.stderr
    reader = RunReader(run_dir)
    current = list(reader.raw_records("speed_request"))
    assert len(current) == 4 and all(r["result"]["error"] is None for r in current)
    history = list(reader.raw_records("speed_request", history=True))
    assert len(history) == 6  # the two earlier failures stay in the file, as history
    report = rigbench("report", str(run_dir), "--vllm-json", str(tmp_path / "v.json"))
    assert report.code == 0, report.stderr
    assert json.loads((tmp_path / "v.json").read_text())["completed"] == 4  # not 6, not counted twice


def test_a_dead_attached_server_stops_the_run_and_resume_finishes_it(tmp_path: Path) -> None:
    slow = FAST.model_copy(update={"itl": Delay(mean_ms=15), "output_tokens": 32})
    out = tmp_path / "runs"
    emu = EmulatorProcess(slow).start()
    port = emu.port
    try:
        with spawned([sys.executable, "-m", "rigbench", "run", "--endpoint", emu.url, *ARGS, "--repetitions", "12",
                      "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     env={**os.environ, "COLUMNS": "200"}) as proc:  # killed on any failure
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                recs = list(out.glob("*/records.jsonl"))
                if recs and recs[0].read_text().count('"speed_batch"') >= 2:
                    break
                time.sleep(0.05)
            assert emu._proc is not None
            os.kill(emu._proc.pid, signal.SIGKILL)  # the server dies mid-run
            stdout, stderr = proc.communicate(timeout=60)
    finally:
        emu.stop()
    msg = " ".join(stderr.split())
    assert proc.returncode == 2, stdout + stderr
    assert "stopped answering" in msg and "--resume" in msg and "Traceback" not in stderr, msg
    run_dir = _only_run(out)
    reader = RunReader(run_dir)
    assert reader.header.status == "interrupted"
    assert not [r for r in reader.raw_records("speed_request") if r["result"]["error"]]  # no "connect" results
    done = len(list(reader.raw_records("speed_batch")))
    assert 2 <= done < 12
    with EmulatorProcess(slow, port=port):  # the server is back
        res = rigbench("run", "--resume", str(run_dir), "--allow-untrusted")
    assert res.code == 0, res.stdout + res.stderr
    reader = RunReader(run_dir)
    assert reader.header.status == "complete"
    assert len({r["unit_id"] for r in reader.raw_records("speed_batch")}) == 12
    assert len(list(reader.raw_records("speed_request"))) == 12


def test_resume_refuses_another_model_behind_the_same_url(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with EmulatorProcess(FAST) as emu:
        port = emu.port
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--repetitions", "2", "--out", str(out))
        assert res.code == 0, res.stderr
    run_dir = _only_run(out)
    _interrupt(run_dir, keep_batches=1)
    records = (run_dir / "records.jsonl").read_bytes()
    with EmulatorProcess(FAST.model_copy(update={"model": "swapped-model"}), port=port):
        res = rigbench("run", "--resume", str(run_dir), "--allow-untrusted")
    msg = " ".join(res.stderr.split())
    assert res.code == 2 and "model.served_name" in msg and "swapped-model" in msg, res.stdout + res.stderr
    reader = RunReader(run_dir)
    assert reader.header.status == "running" and reader.header.fingerprint.model.served_name == "emulated-model"  # type: ignore[union-attr]
    assert (run_dir / "records.jsonl").read_bytes() == records
