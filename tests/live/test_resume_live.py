"""Resume after a crashed engine and after Ctrl-C, against the real embedded llama-server.

(kill -9 of rigbench itself: tests/live/test_run_live.py::test_kill_9_leaves_a_readable_partial_run_that_resumes.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from rigbench.store import RunReader

from ..children import spawned
from ..conftest import wait_for_batches

pytestmark = pytest.mark.live

# --allow-busy-host: these tests are about stopping and resuming, not the host; hypervisor steal on
# the 2-core CI VM would otherwise stop a run on its own (the busy-host check: test_host_live.py)
ARGS = ["--scenarios", "chat_short", "--repetitions", "4", "--warmup", "0", "--allow-busy-host"]


def _foreground_signals() -> None:
    # As in a terminal's foreground job: a shell that ran these tests in the background (`cmd &`
    # in a script) left SIGINT ignored, the child inherits that, and Ctrl-C would never arrive.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(out: Path) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """The run, SIGKILLed with its group when the test leaves the block (its engine dies with it)."""
    return spawned([sys.executable, "-m", "rigbench", "run", *ARGS, "--out", str(out)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "160"}, preexec_fn=_foreground_signals)


def _resume_and_check(run_dir: Path, done_before: set[str]) -> None:
    res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--resume", str(run_dir), *ARGS],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "160"})
    assert res.returncode == 0, res.stdout + res.stderr
    reader = RunReader(run_dir)
    assert reader.header.status == "complete"
    batches = [r["unit_id"] for r in reader.raw_records("speed_batch")]
    assert len(batches) == len(set(batches)) == 4  # nothing redone, nothing lost
    assert done_before <= set(batches)
    failed = [r for r in reader.raw_records("speed_request") if r["result"].get("error")]
    assert failed == []  # no request against the dead engine was kept as a result


def test_crashed_engine_fails_the_run_keeps_completed_units_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with _start(out) as proc:
        run_dir = wait_for_batches(out, 1)
        servers = [c for c in psutil.Process(proc.pid).children(recursive=True) if "llama-server" in c.name()]
        assert len(servers) == 1, servers
        servers[0].kill()  # the engine crashes mid-run; rigbench itself lives on
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2, stderr
    assert b"exited with code -9 during the run" in stderr and b"--resume" in stderr
    reader = RunReader(run_dir)
    assert reader.header.status == "failed" and "exited with code -9" in (reader.header.error or "")
    done_before = {r["unit_id"] for r in reader.raw_records("speed_batch")}
    assert 1 <= len(done_before) < 4
    # every kept batch has all its requests, all successful
    reqs = [r for r in reader.raw_records("speed_request")]
    assert all(r["result"].get("error") is None for r in reqs)
    assert {r["unit_id"].rsplit("/", 1)[0] for r in reqs} == done_before
    _resume_and_check(run_dir, done_before)


def test_ctrl_c_marks_the_run_interrupted_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with _start(out) as proc:
        run_dir = wait_for_batches(out, 1)
        os.kill(proc.pid, signal.SIGINT)  # what Ctrl-C sends to the foreground process
        proc.communicate(timeout=120)
    assert proc.returncode == 130
    reader = RunReader(run_dir)
    assert reader.header.status == "interrupted" and reader.display_status == "incomplete"
    done_before = {r["unit_id"] for r in reader.raw_records("speed_batch")}
    assert len(done_before) >= 1
    # the engine was stopped with rigbench: nothing listens any more
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(run_dir) in " ".join(p.info["cmdline"] or [])]
    _resume_and_check(run_dir, done_before)


def test_resume_of_the_embedded_rig_takes_its_settings_from_the_run_and_refuses_changes(tmp_path: Path) -> None:
    """Issue 14: resuming with another setting (or the bare command the message suggests) must not
    measure a different configuration into this run; `--resume DIR` alone finishes it as started."""
    out = tmp_path / "runs"
    with _start(out) as proc:
        run_dir = wait_for_batches(out, 1)
        os.killpg(proc.pid, signal.SIGKILL)  # rigbench and its engine die at once
        proc.wait(timeout=60)
    done_before = {r["unit_id"] for r in RunReader(run_dir).raw_records("speed_batch")}
    env = {**os.environ, "COLUMNS": "160"}
    for change, flag in ((["--repetitions", "9"], "--repetitions"), (["--scenarios", "code_generation"], "--scenarios"),
                         (["--endpoint", "http://127.0.0.1:9/v1"], "--endpoint")):
        res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--resume", str(run_dir), *change],
                             capture_output=True, text=True, timeout=300, env=env)
        assert res.returncode == 2 and flag in res.stderr and "cannot resume" in res.stderr, res.stderr
    res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--resume", str(run_dir), "--allow-busy-host"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    reader = RunReader(run_dir)
    batches = [r["unit_id"] for r in reader.raw_records("speed_batch")]
    assert reader.header.status == "complete" and len(batches) == len(set(batches)) == 4
    assert done_before <= set(batches)
    assert {r["scenario"] for r in reader.raw_records("speed_request")} == {"chat_short"}
    source_id = reader.header.source_data_id
    res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--resume", str(run_dir)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0 and "already complete" in res.stdout
    assert RunReader(run_dir).header.source_data_id == source_id
