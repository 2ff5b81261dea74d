"""Bounded memory and bounded plans (issue 22, item 5).

Adversary: `--repetitions 99999999999999999999999` (a typo, or a script's bad arithmetic). Before:
the speed suite built every batch up front, grew to 23.7 GB and was killed by the kernel, and
Ctrl-C did not stop it. Now a plan of more requests than `--max-requests` (default 1,000,000) is
refused before anything starts, with the numbers; and a plan that is allowed to be huge walks its
batches lazily: memory stays flat and a signal stops it at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.conftest import wait_for_batches
from tests.unit.cli_inproc import invoke

FAST = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=8)
ARGS = ["--no-sanity", "--allow-untrusted", "--scenarios", "chat_short", "--warmup", "0"]


def test_a_plan_beyond_max_requests_is_refused_up_front_with_the_numbers() -> None:
    t0 = time.monotonic()
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--repetitions", "99999999999999999999999")
    assert res.traceback is None and res.code == 2, (res.code, res.stderr)
    msg = " ".join(res.stderr.split())
    assert "this plan sends 400,000,000,000,000,000,000,000 requests" in msg and "1,000,000 allowed" in msg, msg
    assert time.monotonic() - t0 < 30  # refused, not attempted
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", *ARGS, "--repetitions", "30", "--max-requests", "20")
    assert res.code == 2 and "this plan sends 30 requests" in " ".join(res.stderr.split()) and "--max-requests" in res.stderr
    # control: within the bound, the options pass and the run goes on to attach (a closed port here)
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", *ARGS, "--repetitions", "30", "--max-requests", "30")
    assert res.code == 2 and "cannot reach" in res.stderr


def test_a_huge_allowed_plan_runs_in_flat_memory_and_stops_on_a_signal(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with EmulatorProcess(FAST) as emu:
        proc = subprocess.Popen([sys.executable, "-m", "rigbench", "run", "--endpoint", emu.url, *ARGS,
                                 "--repetitions", str(10**9), "--max-requests", str(10**12), "--out", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            run_dir = wait_for_batches(out, 20, timeout_s=90)  # a list of 10^9 batches would take minutes and GBs
            rss = psutil.Process(proc.pid).memory_info().rss
            assert rss < 400 * 2**20, f"{rss / 2**20:.0f} MiB after 20 batches"
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                _, stderr = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:  # never leave it running
                proc.kill()
                proc.communicate()
                raise
    assert proc.returncode == 143, stderr[-2000:]
    assert RunReader(run_dir).header.status == "interrupted"
