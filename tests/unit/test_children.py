"""A child a test starts never outlives the test (tests/children.py).

Adversary: a child that ignores SIGTERM (a run stuck in one C call, what a signal test is about) and
a test that gives up on it: two such children ran on for 80 minutes with PPID 1. Each case starts a
child that ignores SIGTERM and has a grandchild that ignores it too, then leaves the test's block the
hard way (an assertion, pytest's timeout) or kills the test process outright: neither may survive.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from rigbench.testing import EmulatorProcess, _process
from tests.children import spawned

ROOT = Path(__file__).resolve().parents[2]

# ignores SIGTERM, starts a grandchild that ignores it too, prints the grandchild's PID, sleeps
_STUBBORN = textwrap.dedent("""
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    g = subprocess.Popen([sys.executable, "-c",
                          "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    print(g.pid, flush=True)
    time.sleep(600)
""")


def _gone(pid: int, within_s: float = 10) -> bool:
    """Whether `pid` has ended (exited or a zombie awaiting its reaper) within `within_s`."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["assertion", "timeout"])
def test_a_test_that_fails_kills_its_child_and_the_childs_own_children(how: str) -> None:
    with pytest.raises((AssertionError, subprocess.TimeoutExpired)), \
            spawned([sys.executable, "-c", _STUBBORN], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        grandchild = int(proc.stdout.readline())
        proc.send_signal(signal.SIGTERM)  # ignored, as a stuck run ignores it
        if how == "timeout":
            proc.communicate(timeout=0.5)  # a wait that gives up
        raise AssertionError("the test failed")
    try:
        assert proc.returncode == -signal.SIGKILL
        assert _gone(grandchild), f"grandchild {grandchild} outlived the test"
    finally:
        _kill(proc.pid, grandchild)  # what this test checks must not be what cleans up after it


def _kill(*pids: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_a_test_process_killed_outright_takes_its_child_with_it() -> None:
    """pytest itself killed (a CI runner's timeout): no `finally` runs; the child's death signal ends it. (Its own
    children need theirs: rigbench gives one to the engines it launches, and its backstop follows it by pidfd.)"""
    runner = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from tests.children import spawned
        with spawned([sys.executable, "-c", {_STUBBORN!r}], stdout=subprocess.PIPE, text=True) as proc:
            print(proc.pid, proc.stdout.readline().strip(), flush=True)
            time.sleep(600)
    """)
    pids: list[int] = []
    with spawned([sys.executable, "-c", runner], stdout=subprocess.PIPE, text=True) as test_proc:
        try:
            assert test_proc.stdout is not None
            pids = [int(x) for x in test_proc.stdout.readline().split()]
            test_proc.kill()  # SIGKILL to the test process alone: nothing in it runs
            test_proc.wait(timeout=30)
            assert _gone(pids[0]), f"child {pids[0]} outlived the test process"
        finally:
            _kill(*pids)  # the grandchild has no death signal of its own: this test's to end


def test_an_emulator_whose_start_is_interrupted_does_not_outlive_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C or a test's timeout while `EmulatorProcess` waits for the emulator's first line: the `with`
    block never got the emulator, so its exit would not stop it (one ran on with PPID 1 after an interrupted
    suite). The start stops it before the interrupt goes on."""
    started: list[subprocess.Popen[str]] = []
    real_popen = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[str]:
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        assert proc.stdout is not None
        proc.stdout.readline = _interrupted  # type: ignore[method-assign]
        return proc

    monkeypatch.setattr(_process.subprocess, "Popen", popen)
    try:
        with pytest.raises(KeyboardInterrupt), EmulatorProcess():
            pass
        [proc] = started
        assert _gone(proc.pid), f"emulator {proc.pid} outlived its interrupted start"
    finally:
        _kill(*(p.pid for p in started))
        for p in started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=10)


def _interrupted(*args: Any) -> str:
    raise KeyboardInterrupt
