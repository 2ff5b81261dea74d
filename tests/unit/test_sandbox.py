"""The task sandbox refuses every path out of the task directory and limits what code can do."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from rigbench.suites.agent._sandbox import PathRefused, RunLimits, Sandbox, network_isolation, run_limited


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    proj = tmp_path / "src"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "secret.txt").write_text("do not read")
    sb = Sandbox.copy_of(proj)
    yield sb
    sb.cleanup()


def test_works_on_a_copy(box: Sandbox, tmp_path: Path) -> None:
    box.write_file("pkg/a.py", "x = 2\n")
    assert (tmp_path / "src" / "pkg" / "a.py").read_text() == "x = 1\n"
    assert box.read_file("pkg/a.py") == "x = 2\n"
    assert box.list_files(".") == ["pkg/a.py"]


@pytest.mark.parametrize("path", ["../secret.txt", "pkg/../../secret.txt", "/etc/passwd", "~/x", ""])
def test_refuses_paths_outside(box: Sandbox, path: str) -> None:
    with pytest.raises(PathRefused):
        box.read_file(path)
    with pytest.raises(PathRefused):
        box.write_file(path, "pwned")
    assert box.refused == 2


def test_refuses_symlinks_out(box: Sandbox, tmp_path: Path) -> None:
    (box.root / "link.txt").symlink_to(tmp_path / "secret.txt")
    (box.root / "linkdir").symlink_to(tmp_path)
    with pytest.raises(PathRefused):
        box.read_file("link.txt")
    with pytest.raises(PathRefused):
        box.write_file("linkdir/secret.txt", "pwned")
    with pytest.raises(PathRefused):
        box.list_files("linkdir")
    assert (tmp_path / "secret.txt").read_text() == "do not read"
    assert "link.txt" not in box.list_files(".")


def test_wall_time_limit_kills(tmp_path: Path) -> None:
    out = run_limited([sys.executable, "-c", "import time; time.sleep(30)"], tmp_path, RunLimits(wall_s=1.0))
    assert out.timed_out and out.returncode is None


def test_cpu_limit_kills(tmp_path: Path) -> None:
    out = run_limited([sys.executable, "-c", "while True: pass"], tmp_path, RunLimits(cpu_s=1, wall_s=20))
    assert not out.timed_out and out.returncode is not None and out.returncode < 0


def test_memory_limit(tmp_path: Path) -> None:
    code = "b = bytearray(600 * 1024 * 1024); print('allocated')"
    out = run_limited([sys.executable, "-c", code], tmp_path, RunLimits(memory_bytes=300 * 1024 * 1024))
    assert out.returncode != 0 and "allocated" not in out.output and "MemoryError" in out.output


def test_output_limit(tmp_path: Path) -> None:
    code = "import sys\nfor _ in range(10000): sys.stdout.write('y' * 1000 + '\\n')"
    out = run_limited([sys.executable, "-c", code], tmp_path, RunLimits(output_bytes=64 * 1024))
    assert len(out.output) <= 64 * 1024 and out.returncode != 0


def test_no_network_when_the_os_allows(tmp_path: Path) -> None:
    prefix, note = network_isolation()
    if not prefix:
        pytest.skip(f"this OS gives no network isolation: {note}")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('CONNECTED')"
    try:
        isolated = run_limited([sys.executable, "-c", code], tmp_path, RunLimits(wall_s=10))
        open_ = run_limited(
            [sys.executable, "-c", code], tmp_path, RunLimits(wall_s=10), isolate_network=False
        )
    finally:
        srv.close()
    assert isolated.network_isolated and "CONNECTED" not in isolated.output
    assert "CONNECTED" in open_.output  # the same code does connect without the namespace


def test_pytest_counts_from_the_shipped_repo_task() -> None:
    from rigbench.suites.agent._tasks import load_task

    task = load_task("cart_bugs")
    sb = Sandbox.copy_of(task.path / "project")
    try:
        res = sb.run_tests(RunLimits())
    finally:
        sb.cleanup()
    assert (res.passed, res.failed) == (7, 5), res.output_tail
