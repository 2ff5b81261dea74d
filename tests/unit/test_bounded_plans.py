"""Bounded memory and bounded plans (issue 22, item 5).

Adversary: `--repetitions 99999999999999999999999` (a typo, or a script's bad arithmetic). Before:
the speed suite built every batch up front, grew to 23.7 GB and was killed by the kernel, and
Ctrl-C did not stop it. Now a plan of more requests than `--max-requests` (default 1,000,000) is
refused before anything starts, with the numbers; and a plan that is allowed to be huge walks its
batches lazily: memory stays flat and a signal stops it at once. A plan longer than a day is refused up
front where its length is known (a load schedule), and stopped after its first measured batch where only
the server's speed tells (the speed suite), unless `--allow-long-run`.
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
from tests.children import spawned
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
    with EmulatorProcess(FAST) as emu, \
            spawned([sys.executable, "-m", "rigbench", "run", "--endpoint", emu.url, *ARGS, "--repetitions", str(10**9),
                     "--max-requests", str(10**12), "--allow-long-run", "--out", str(out)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
        try:
            run_dir = wait_for_batches(out, 20, timeout_s=90)  # a list of 10^9 batches would take minutes and GBs
            rss = psutil.Process(proc.pid).memory_info().rss
            assert rss < 400 * 2**20, f"{rss / 2**20:.0f} MiB after 20 batches"
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            _, stderr = proc.communicate(timeout=60)  # past this, the `spawned` block kills it
    assert proc.returncode == 143, stderr[-2000:]
    assert RunReader(run_dir).header.status == "interrupted"


# -- plans longer than a day (issue 22, item 5) ----------------------------------------------------------------


def test_a_load_schedule_longer_than_a_day_is_refused_up_front_with_the_numbers() -> None:
    cases = {
        ("--rate", "0.001", "--requests", "100"): "about 99,000 s (27.5 h: 100 requests at --rate 0.001/s)",
        ("--rate", "1", "--duration", "100000"): "about 100,000 s (27.8 h: --duration 100000 s)",
        ("--sweep", "--duration", "20000"): "about 100,000 s (27.8 h: 5 sweep rates x --duration 20000 s)",
        ("--sessions", "1001", "--rate", "0.01"): "about 100,000 s (27.8 h: 1,001 sessions started at --rate 0.01/s)",
    }
    for args, numbers in cases.items():
        t0 = time.monotonic()
        res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", *args)
        assert res.traceback is None and res.code == 2, (args, res.stderr)
        msg = " ".join(res.stderr.split())
        assert numbers in msg and "more than a day (86,400 s)" in msg and "--allow-long-run" in msg, (args, msg)
        assert len(res.stderr.strip().splitlines()) == 1 and time.monotonic() - t0 < 30
        # the same plan with the bound lifted, and a plan within a day: both go on to attach (a closed port here)
        res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", *args, "--allow-long-run")
        assert res.code == 2 and "cannot reach" in res.stderr, (args, res.stderr)
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--rate", "1", "--duration", "86400")
    assert res.code == 2 and "cannot reach" in res.stderr, res.stderr


def test_a_plan_file_whose_rigs_sum_past_a_day_is_refused_naming_the_key(tmp_path: Path) -> None:
    rigs = "rigs:\n" + "".join(f"  - {{name: r{i}, endpoint: {{base_url: 'http://127.0.0.1:9/v1'}}}}\n"
                               for i in range(2))
    plan = tmp_path / "p.yaml"
    plan.write_text("name: p\nsuites: [load]\nload: {rate_rps: 1, duration_s: 50000}\n" + rigs)
    res = invoke("run", str(plan), "--out", str(tmp_path / "o"))
    msg = " ".join(res.stderr.split())
    assert res.code == 2 and "about 100,000 s (27.8 h: --duration 50000 s x 2 rigs)" in msg, msg
    assert f"set `allow_long_run: true` in {plan}" in msg and not (tmp_path / "o").exists()
    # on Ray the rigs run side by side: the longest rig's schedule counts, checked before connecting
    plan.write_text(plan.read_text().replace("duration_s: 50000", "duration_s: 90000"))
    res = invoke("run", str(plan), "--ray", "local", "--out", str(tmp_path / "o"))
    msg = " ".join(res.stderr.split())
    assert res.code == 2 and "about 90,000 s (25.0 h: --duration 90000 s)" in msg and "x 2 rigs" not in msg, msg
    plan.write_text(plan.read_text().replace("name: p\n", "name: p\nallow_long_run: true\n")
                    .replace("duration_s: 90000", "duration_s: 50000"))
    res = invoke("run", str(plan), "--out", str(tmp_path / "o"))
    assert res.traceback is None and "more than a day" not in res.stderr and (tmp_path / "o").exists(), res.stderr


SLOW = EmulatorScript(ttft=Delay(mean_ms=20), itl=Delay(mean_ms=10), output_tokens=8)  # about 0.1 s a batch


def test_a_speed_run_projected_past_a_day_stops_after_its_first_batch_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    huge = ["--repetitions", str(10**7), "--max-requests", str(10**8)]  # 10^7 batches x 0.1 s: about 11 days
    with EmulatorProcess(SLOW) as emu:
        t0 = time.monotonic()
        res = invoke("run", "--endpoint", emu.url, *ARGS, *huge, "--out", str(out))
        assert res.traceback is None and res.code == 2, res.stderr
        assert time.monotonic() - t0 < 60
        msg = " ".join(res.stderr.split())
        (run_dir,) = out.iterdir()
        assert "chat_short (c=1): the first measured batch took" in msg and "9,999,999 more batches" in msg, msg
        assert "more than a day" in msg and f"rigbench run --resume {run_dir} --allow-long-run" in msg, msg
        reader = RunReader(run_dir)
        assert reader.header.status == "interrupted" and len(list(reader.raw_records("speed_batch"))) == 1
        # resumed without lifting the bound: projected again, stopped again, one more batch kept
        res = invoke("run", "--resume", str(run_dir))
        assert res.code == 2 and "more than a day" in res.stderr, res.stderr
        assert len(list(RunReader(run_dir).raw_records("speed_batch"))) == 2
        # resumed with --allow-long-run: not a changed setting; it runs on past the projection
        with spawned([sys.executable, "-m", "rigbench", "run", "--resume", str(run_dir), "--allow-long-run"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
            try:
                wait_for_batches(out, 6, timeout_s=90)
            finally:
                os.kill(proc.pid, signal.SIGTERM)
                _, stderr = proc.communicate(timeout=60)  # past this, the `spawned` block kills it
        assert proc.returncode == 143, stderr[-2000:]
        # control: a plan well within a day runs to the end
        res = invoke("run", "--endpoint", emu.url, *ARGS, "--repetitions", "3", "--out", str(tmp_path / "ok"))
        assert res.code == 0 and "more than a day" not in res.stderr, res.stderr
