"""SIGTERM and SIGHUP stop a run the way Ctrl-C does (issue 22, item 2).

Adversary: `timeout`, systemd, Kubernetes or a CI runner (SIGTERM), a closed terminal (SIGHUP).
Before: exit -15 at once, run.json left `running`, no message. Each case runs `rigbench run` as a
subprocess against the emulator, signals it once its first batch is written, and resumes it.
Control: Ctrl-C (SIGINT) keeps its exit code 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.children import spawned
from tests.conftest import wait_for_batches

SLOW = EmulatorScript(ttft=Delay(mean_ms=20), itl=Delay(mean_ms=10), output_tokens=24)
REPS = 24
ARGS = ["--no-sanity", "--allow-untrusted", "--scenarios", "chat_short", "--warmup", "0"]


def _start(url: str, out: Path) -> contextlib.AbstractContextManager[subprocess.Popen[str]]:
    """The run, as a child SIGKILLed with its group when the test leaves the block (passed, failed, timed out)."""
    def foreground() -> None:  # as a terminal's foreground job: the stop signals at their defaults
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # (a CI runner under nohup ignores SIGHUP,
            signal.signal(sig, signal.SIG_DFL)                     # and rigbench rightly keeps it ignored)

    return spawned([sys.executable, "-m", "rigbench", "run", "--endpoint", url, *ARGS, "--repetitions", str(REPS),
                    "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                   env={**os.environ, "COLUMNS": "200"}, preexec_fn=foreground)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_stop_signal_marks_the_run_interrupted_prints_the_resume_command_and_resumes(
        tmp_path: Path, sig: signal.Signals, code: int) -> None:
    out = tmp_path / "runs"
    with EmulatorProcess(SLOW) as emu:
        with _start(emu.url, out) as proc:
            run_dir = wait_for_batches(out, 1, timeout_s=120)
            os.kill(proc.pid, sig)
            stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == code, (proc.returncode, stdout[-2000:], stderr[-2000:])
        assert "Traceback" not in stderr, stderr
        said = " ".join((stdout + stderr).split())
        assert f"rigbench run --resume {run_dir}" in said, said[-1500:]
        reader = RunReader(run_dir)
        assert reader.header.status == "interrupted", reader.header.status
        done = len(list(reader.raw_records("speed_batch")))
        assert 1 <= done < REPS
        res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--resume", str(run_dir), "--allow-untrusted"],
                             capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr[-2000:]
    reader = RunReader(run_dir)
    batches = [r["unit_id"] for r in reader.raw_records("speed_batch")]
    assert reader.header.status == "complete" and len(batches) == len(set(batches)) == REPS


def test_a_second_signal_exits_at_once_and_leaves_a_readable_run(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with EmulatorProcess(SLOW) as emu:
        with _start(emu.url, out) as proc:
            run_dir = wait_for_batches(out, 1, timeout_s=120)
            os.kill(proc.pid, signal.SIGTERM)
            os.kill(proc.pid, signal.SIGTERM)
            t0 = time.monotonic()
            _, stderr = proc.communicate(timeout=60)
        assert time.monotonic() - t0 < 20
        assert proc.returncode == 143 and "Traceback" not in stderr, stderr[-2000:]
        res = subprocess.run([sys.executable, "-m", "rigbench", "report", str(run_dir)], capture_output=True,
                             text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
        res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--resume", str(run_dir), "--allow-untrusted"],
                             capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stderr[-2000:]
    assert RunReader(run_dir).header.status == "complete"
