"""One writer per run directory (issue 22, item 4).

Adversary: two `rigbench run --resume DIR` at once, and a resume of a run that another process is
still writing (before: both exit 0 and the same units are measured and appended twice). Healthy
controls: a lock left by a process that died is taken over with a note, and a released lock lets
the resume through.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from rigbench.store import LOCK_FILE, RunLock, RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.children import spawned
from tests.conftest import wait_for_batches
from tests.unit.cli_inproc import invoke

FAST = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=16)
SLOW = EmulatorScript(ttft=Delay(mean_ms=20), itl=Delay(mean_ms=10), output_tokens=24)
ARGS = ["--no-sanity", "--allow-untrusted", "--scenarios", "chat_short", "--warmup", "0"]


def _unfinished_run(url: str, out: Path) -> Path:
    """A complete run made unfinished: its last batch record gone, as after a kill -9."""
    res = invoke("run", "--endpoint", url, *ARGS, "--repetitions", "3", "--out", str(out))
    assert res.code == 0, res.stderr
    (run_dir,) = out.iterdir()
    rec = run_dir / "records.jsonl"
    lines = rec.read_text().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if '"speed_batch"' in line)
    rec.write_text("".join(lines[:last]))
    head = json.loads((run_dir / "run.json").read_text())
    head.update(status="running", finished_at=None, source_data_id=None)
    (run_dir / "run.json").write_text(json.dumps(head))
    return run_dir


def _batches(run_dir: Path) -> list[str]:
    return [r["unit_id"] for r in RunReader(run_dir).raw_records("speed_batch", history=True)]


def test_a_second_writer_is_refused_with_the_holders_pid_and_start_time(tmp_path: Path) -> None:
    with EmulatorProcess(FAST) as emu:
        run_dir = _unfinished_run(emu.url, tmp_path / "runs")
        held = RunLock(run_dir)  # plays the first `run --resume`, still measuring
        try:
            res = invoke("run", "--resume", str(run_dir), "--allow-untrusted")
        finally:
            held.release()
        assert res.traceback is None and res.code == 2, (res.code, res.stderr)
        msg = " ".join(res.stderr.split())
        assert f"being written by another rigbench process (PID {os.getpid()}, started 20" in msg, msg
        assert len(_batches(run_dir)) == 2  # nothing appended by the refused one
        res = invoke("run", "--resume", str(run_dir), "--allow-untrusted")  # control: the lock is free again
        assert res.code == 0, res.stderr
    assert sorted(_batches(run_dir)) == sorted(set(_batches(run_dir))) and len(_batches(run_dir)) == 3
    assert "took over" not in res.stdout  # a lock released cleanly names no holder
    assert (run_dir / LOCK_FILE).read_text() == ""


def test_a_lock_left_by_a_dead_process_is_taken_over_with_a_note(tmp_path: Path) -> None:
    with EmulatorProcess(FAST) as emu:
        run_dir = _unfinished_run(emu.url, tmp_path / "runs")
        (run_dir / LOCK_FILE).write_text(json.dumps({"pid": 4_000_000, "host": os.uname().nodename,
                                                     "started_at": "2026-12-01T10:00:00+00:00"}))
        res = invoke("run", "--resume", str(run_dir), "--allow-untrusted")
    assert res.code == 0 and res.traceback is None, res.stderr
    said = " ".join(res.stdout.split())
    assert "took over the lock" in said and "PID 4000000, started 2026-12-01T10:00:00+00:00" in said, said[:2000]
    assert RunReader(run_dir).header.status == "complete" and len(_batches(run_dir)) == 3


def test_a_resume_of_a_run_still_being_written_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with EmulatorProcess(SLOW) as emu:
        with spawned([sys.executable, "-m", "rigbench", "run", "--endpoint", emu.url, *ARGS, "--repetitions", "30",
                      "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
            try:
                run_dir = wait_for_batches(out, 1, timeout_s=120)
                res = invoke("run", "--resume", str(run_dir), "--allow-untrusted")
                assert res.traceback is None and res.code == 2, (res.code, res.stderr)
                assert f"PID {proc.pid}," in " ".join(res.stderr.split())
            finally:
                os.kill(proc.pid, signal.SIGTERM)
                proc.communicate(timeout=60)  # past this, the `spawned` block kills it
        res = invoke("run", "--resume", str(run_dir), "--allow-untrusted")
        assert res.code == 0, res.stderr
    assert _batches(run_dir) == sorted(set(_batches(run_dir)), key=_batches(run_dir).index)
    assert len(_batches(run_dir)) == 30
