"""benchmarks/stability_calibration.py, the script that measures the stability warnings' false alarms and
catches (issue 31 item 3): its corpus count on the repository's quiet runs (the recorded result: no warning),
its disturbed-window count, and its recorder, which must disturb what it says it disturbs (the engine's
processes, the engine's cores) or say that it did not."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import psutil
import pytest

from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
THROTTLED = RESULTS / "stability-throttle-busy-devbox-2026-12-03"


@pytest.fixture(scope="module")
def calib() -> Iterator[ModuleType]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import stability_calibration

        yield stability_calibration
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_repositorys_quiet_runs_draw_no_stability_warning(calib: ModuleType) -> None:
    """The recorded corpus result (docs/benchmarks.md, "Stability calibration"): the 8 runs of 5 repetitions
    taken on a quiet host, 64 judged series, no warning (the MAD and Kendall rules drew 11 in 5 of them)."""
    res = calib.corpus([RESULTS / "h200", RESULTS / "h200-2026-12-02", RESULTS / "h200-quiet-2026-12-01"], None, None)
    q = res["quiet_at_5"]
    assert (q["runs"], q["series"]) == (8, 64) and q["runs_with_a_warning"] == 0, q["warned"]


def test_a_disturbed_corpus_counts_the_runs_that_named_the_disturbed_window(calib: ModuleType) -> None:
    """The throttled runs recorded on the busy VM: both named chat_short (c=1), the window throttled; another
    window's name is named by neither (the count reads the warning's window, not any warning)."""
    named = calib.corpus([THROTTLED], None, "chat_short (c=1)")
    assert (named["disturbed_window_named"], named["disturbed_runs"]) == (2, 2)
    other = calib.corpus([THROTTLED], None, "code_generation (c=1)")
    assert other["disturbed_window_named"] == 0


def test_the_engine_is_found_under_the_run_whatever_serves_it(calib: ModuleType, tmp_path: Path) -> None:
    """The throttle stops the engine's processes and the neighbour runs on its cores: the engine is found under
    the `rigbench run` process whether llama-server itself or the prebuilt's xserver.py serves (a name test on
    "llama" found no xserver.py, and the throttle then stopped nothing); another child is not the engine."""
    server = tmp_path / "xserver.py"
    server.write_text("import time\ntime.sleep(60)\n")
    other = tmp_path / "helper.py"
    other.write_text("import time\ntime.sleep(60)\n")
    run = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; a = subprocess.Popen([sys.executable, "
                            f"'-I', {str(server)!r}]); b = subprocess.Popen([sys.executable, {str(other)!r}]); "
                            "a.wait(); b.wait()"])
    try:
        deadline = time.monotonic() + 30
        while len(psutil.Process(run.pid).children(recursive=True)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the children have exec'd
        engine = calib._engine(run)
        assert [" ".join(p.cmdline()) for p in engine] == [f"{sys.executable} -I {server}"]
        assert calib._cores(engine) == sorted(engine[0].cpu_affinity())
        assert calib._cores([]) == sorted(os.sched_getaffinity(0))  # none found: the run's own cores
        neighbour = calib._neighbour([0])
        try:
            assert psutil.Process(neighbour.pid).cpu_affinity() == [0]
        finally:
            neighbour.kill()
            neighbour.wait()
    finally:
        for p in psutil.Process(run.pid).children(recursive=True):
            p.kill()
        run.kill()
        run.wait()


def test_the_recorder_pins_its_neighbour_and_says_when_there_is_nothing_to_throttle(calib: ModuleType,
                                                                                   tmp_path: Path) -> None:
    """A run attached to an endpoint has no engine process: the throttle is reported not applied (a disturbed
    run that no rule named would otherwise count as a miss), and the neighbour runs on the run's cores and is
    gone afterwards."""
    fast = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=8)
    with EmulatorProcess(fast) as emu:
        extra = ["--endpoint", emu.url, "--scenarios", "chat_short", "--repetitions", "2", "--warmup", "0",
                 "--no-sanity", "--allow-untrusted", "--allow-unconfined"]
        [throttled] = calib.record(1, tmp_path / "t", "throttle", "speed/chat_short/c1/r0", 0.5, extra)
        [neighboured] = calib.record(1, tmp_path / "n", "neighbour", "speed/chat_short/c1/r0", 0.5, extra)
    assert throttled["disturbed_at_s"] is not None and "no engine process" in throttled["not_applied"]
    assert neighboured["neighbour_cores"] == sorted(os.sched_getaffinity(0)) and "not_applied" not in neighboured
    # gone: none of this process's children is a busy loop (another test's neighbour elsewhere on a shared
    # host is not this recorder's)
    assert not [p for p in psutil.Process().children(recursive=True)
                if p.cmdline() == [sys.executable, "-c", "while True: pass"]]
