"""Engine processes: clear errors naming the command and log, and the whole group stopped."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import pytest

from rigbench.errors import PortInUseError, RigStartError
from rigbench.rig import EngineProcess, LaunchedRig, ModelInfo, free_port


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(PortInUseError, match=rf"(?s)port {port}.*command: "):
            EngineProcess(["true"], tmp_path / "log").start(port=port)


def test_missing_binary(tmp_path: Path) -> None:
    with pytest.raises(RigStartError, match="not found") as e:
        EngineProcess([str(tmp_path / "no-such-engine")], tmp_path / "log").start()
    assert str(e.value).endswith("Check the path.")  # a generic process names no engine's own remedy


def test_missing_llama_server_says_rigbench_can_build_one(tmp_path: Path) -> None:
    from rigbench.rig.engines._llamacpp._smoke import smoke_test

    with pytest.raises(RigStartError, match=r"(?s)not found.*omit --llama-server"):
        smoke_test(tmp_path / "llama-server", tmp_path / "model.gguf", tmp_path / "log")


def test_crash_during_start_names_command_and_log(tmp_path: Path) -> None:
    script = "import sys; print('bad flag --xyz', flush=True); sys.exit(3)"
    rig = LaunchedRig([sys.executable, "-c", script], engine=None, port=free_port(), log_path=tmp_path / "engine.log",
                      model=ModelInfo())
    with pytest.raises(RigStartError) as e:
        asyncio.run(rig.start())
    msg = str(e.value)
    assert "exited with code 3" in msg and "engine.log" in msg and "bad flag --xyz" in msg and "-c" in msg


def test_stop_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    script = ("import subprocess, sys, time; "
              f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
              f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    proc = EngineProcess([sys.executable, "-c", script], tmp_path / "log")
    proc.start()
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text():
            break
        asyncio.run(asyncio.sleep(0.05))
    child = int(pidfile.read_text())
    proc.stop(timeout_s=5)
    import os

    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        asyncio.run(asyncio.sleep(0.05))
    else:
        pytest.fail("the engine's child process outlived stop()")


def _engine_outlives_kill_9(tmp_path: Path, program: str, death_signal: str = "") -> bool:
    """Start `program` as an engine from a stand-in rigbench, kill -9 that, and say whether the
    engine was still running 20 s later (`death_signal`: the EngineProcess keyword, as source)."""
    import os
    import signal
    import subprocess
    import time

    pidfile = tmp_path / "engine.pid"
    parent = ("import sys, time; from pathlib import Path; from rigbench.rig import EngineProcess; "
              "from rigbench.rig._rig import engine_death_signal; from rigbench.rig.engines import get_engine; "
              f"p = EngineProcess([sys.executable, '-c', {program!r}], Path({str(tmp_path / 'log')!r}){death_signal}); "
              f"p.start(); time.sleep(0.5); open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    rb = subprocess.Popen([sys.executable, "-c", parent])
    deadline = time.monotonic() + 20
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    engine = int(pidfile.read_text())
    os.kill(rb.pid, signal.SIGKILL)  # nothing in rigbench gets to clean up
    rb.wait()
    while time.monotonic() < deadline:
        try:
            os.kill(engine, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.05)
    os.kill(engine, signal.SIGKILL)
    return True


def test_engine_dies_with_rigbench_even_on_kill_9(tmp_path: Path) -> None:
    if _engine_outlives_kill_9(tmp_path, "import time; time.sleep(60)"):
        pytest.fail("the engine outlived a kill -9 of the process that launched it")


def test_llama_server_that_hangs_on_sigterm_still_dies_with_rigbench(tmp_path: Path) -> None:
    """Adversary: an engine whose graceful exit hangs. After a kill -9 of rigbench, llama-server got
    the death signal SIGTERM, logged "cleaning up before exit..." and hung there, orphaned, holding
    its port. llama.cpp's engine module asks for SIGKILL; this stand-in ignores SIGTERM."""
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    if _engine_outlives_kill_9(tmp_path, stubborn, ", death_signal=engine_death_signal(get_engine('llamacpp'))"):
        pytest.fail("a llama-server that ignores SIGTERM outlived a kill -9 of rigbench")
