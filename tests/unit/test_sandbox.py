"""The one sandbox: every way a model's code could read, write, reach or grade past it is refused.

Each test plays an adversary from issue 11: reading the host (/root, the rigbench checkout, a file
next to the work dir), writing outside the work dir (/tmp), reaching a server on the host's
127.0.0.1, a fork bomb, a conftest hook that turns failures into passes, an object whose __eq__
always says True, and a forged result line at exit. These tests need a working bubblewrap (CI
installs it): without one they fail under CI=true and skip elsewhere (tests/needs.py), and
`test_refuses_to_run_unconfined_without_permission` still runs.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from rigbench.sandbox import (
    GRADER_NEVER_COPIES,
    Limits,
    PathRefused,
    SandboxUnavailable,
    Workdir,
    confinement,
    run_confined,
    run_function_tests,
    run_pytest,
    same_json,
)
from rigbench.sandbox._run import sandbox_python
from tests.needs import requires

REPO = Path(__file__).resolve().parents[2]
confined = requires(confinement().kind == "bwrap", f"no working bubblewrap here: {confinement().note}")
FAST = Limits(cpu_s=5, memory_bytes=512 * 1024 * 1024, wall_s=20, file_bytes=1 << 20, processes=16)


def _py(work: Path, code: str, limits: Limits = FAST):
    (work / "prog.py").write_text(code)
    return run_confined([sandbox_python(False), "-I", "-S", "prog.py"], work, limits, allow_unconfined=False)


@pytest.fixture
def box(tmp_path: Path):
    proj = tmp_path / "src"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "secret.txt").write_text("do not read")
    sb = Workdir.copy_of(proj)
    yield sb
    sb.cleanup()


# --- file tools: the model's paths stay in the working copy -------------------------------------

def test_works_on_a_copy(box: Workdir, tmp_path: Path) -> None:
    box.write_file("pkg/a.py", "x = 2\n")
    assert (tmp_path / "src" / "pkg" / "a.py").read_text() == "x = 1\n"
    assert box.read_file("pkg/a.py") == "x = 2\n"
    assert box.list_files(".") == ["pkg/a.py"]


@pytest.mark.parametrize("path", ["../secret.txt", "pkg/../../secret.txt", "/etc/passwd", "~/x", ""])
def test_refuses_paths_outside(box: Workdir, path: str) -> None:
    with pytest.raises(PathRefused):
        box.read_file(path)
    with pytest.raises(PathRefused):
        box.write_file(path, "pwned")
    assert box.refused == 2


def test_refuses_symlinks_out(box: Workdir, tmp_path: Path) -> None:
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


# --- the confined process -----------------------------------------------------------------------

@confined
def test_host_filesystem_is_not_there(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.txt").write_text("next to the work dir")
    targets = ["/root/.cache", str(REPO / "pyproject.toml"), str(tmp_path / "secret.txt"), "/etc/passwd",
               "/home", "/work"]
    code = "import os\nfor p in %r:\n    try:\n        print(p, 'READ', os.listdir(p) if os.path.isdir(p) " \
           "else open(p).read()[:40])\n    except OSError as e:\n        print(p, 'REFUSED', type(e).__name__)\n"
    out = _py(work, code % targets)
    assert out.confinement.kind == "bwrap" and out.returncode == 0, out.output
    assert out.output.count("REFUSED") == len(targets) and "READ" not in out.output, out.output


@confined
def test_writes_outside_the_work_dir_fail_and_leave_the_host_untouched(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    marker = Path("/tmp") / f"rigbench-sandbox-escape-{tmp_path.name}"
    code = (f"import os\nfor p in [{str(marker)!r}, '/etc/x', '/sandbox/../x']:\n    try:\n        open(p, 'w').write('x')\n"
            "        print(p, 'WROTE')\n    except OSError as e:\n        print(p, 'REFUSED', type(e).__name__)\n"
            "open('inside.txt', 'w').write('ok')\n")
    out = _py(work, code)
    assert "WROTE" not in out.output and out.output.count("REFUSED") == 3, out.output
    assert not marker.exists()
    assert (work / "inside.txt").read_text() == "ok"  # the work dir itself is writable


@confined
def test_host_loopback_server_is_unreachable(tmp_path: Path) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('CONNECTED')\n"
    try:
        out = _py(tmp_path, code)
    finally:
        srv.close()
    assert "CONNECTED" not in out.output and out.returncode != 0, out.output


@confined
def test_fork_bomb_is_bounded(tmp_path: Path) -> None:
    # Bounded twice: each child sleeps instead of forking on, and the sandbox allows 16 processes.
    code = ("import os, time\nn = 0\ntry:\n    for _ in range(200):\n        if os.fork() == 0:\n"
            "            time.sleep(2)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n"
            "    print('STOPPED', n, type(e).__name__)\n")
    out = _py(tmp_path, code, FAST._replace(processes=16))
    assert "STOPPED" in out.output, out.output
    assert int(out.output.split()[1]) < 16


@confined
def test_wall_cpu_memory_and_file_limits(tmp_path: Path) -> None:
    hang = _py(tmp_path, "import time\ntime.sleep(30)\n", FAST._replace(wall_s=1.0))
    assert hang.timed_out and hang.returncode is None
    spin = _py(tmp_path, "while True: pass\n", FAST._replace(cpu_s=1))
    assert not spin.timed_out and spin.returncode is not None and spin.returncode != 0
    big = _py(tmp_path, "b = bytearray(600 * 1024 * 1024)\nprint('allocated')\n",
              FAST._replace(memory_bytes=300 * 1024 * 1024))
    assert big.returncode != 0 and "allocated" not in big.output and "MemoryError" in big.output
    spill = _py(tmp_path, "open('f', 'wb').write(b'y' * (2 << 20))\nprint('wrote')\n")
    assert spill.returncode != 0 and "wrote" not in spill.output


def test_refuses_to_run_unconfined_without_permission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rigbench.sandbox import _confine, _run

    monkeypatch.setattr(_run, "confinement", lambda: _confine.Confinement("unconfined", "bwrap is missing"))
    with pytest.raises(SandboxUnavailable, match=r"bwrap is missing.*apt-get install bubblewrap.*--allow-unconfined"):
        _py(tmp_path, "print('ran')\n")
    out = run_confined([sys.executable, "-I", "-S", "-c", "print('ran')"], tmp_path, FAST, allow_unconfined=True)
    assert out.confinement.kind == "unconfined" and "ran" in out.output


# --- code packs: the result comes back on rigbench's channel and is compared type-strictly --------

def _fn(code: str, cases: list[tuple[list[object], object]]):
    return run_function_tests(code, "f", cases, limits=FAST, allow_unconfined=False)


@confined
def test_always_equal_object_fails() -> None:
    code = "class Yes:\n    def __eq__(self, other):\n        return True\n\ndef f(x):\n    return Yes()\n"
    r = _fn(code, [([1], 2)])
    assert not r.passed and r.cases[0].error and "not JSON data" in r.cases[0].error


@confined
def test_forged_exit_line_and_forged_channel_fail() -> None:
    forged = ('import atexit, json\natexit.register(lambda: print(json.dumps({"cases": [{"passed": True}], '
              '"load_error": None, "network": "namespace"})))\ndef f(x):\n    return 0\n')
    r = _fn(forged, [([1], 2)])
    assert not r.passed and r.cases[0].got == "0"
    # Writing on the channel itself: a second result for case 0 is tampering, graded failed.
    chan = ('import os, sys\nfd = int(sys.argv[sys.argv.index("--channel") + 1])\n'
            'os.write(fd, b\'{"case": 0, "value": "2"}\\n\')\ndef f(x):\n    return 2\n')
    r = _fn(chan, [([1], 2)])
    assert not r.passed and r.error and "tampered" in r.error


@confined
def test_correct_function_passes_and_types_are_strict() -> None:
    r = _fn("def f(x):\n    return [x, x * 2]\n", [([1], [1, 2]), ([2], (2, 4))])
    assert r.passed, r
    assert not _fn("def f(x):\n    return 1.0\n", [([1], 1)]).passed
    assert not _fn("def f(x):\n    return True\n", [([1], 1)]).passed
    assert not _fn("def f(x):\n    return {'1': 1}\n", [([1], {"1": 1.0})]).passed


def test_same_json_is_type_strict() -> None:
    assert same_json([1, {"a": None}], [1, {"a": None}])
    assert not same_json(1, 1.0) and not same_json(True, 1) and not same_json([1], [1, 1])
    assert not same_json(float("nan"), float("nan"))


# --- repo-fix grading: a pristine copy that never takes the model's runner config -----------------

@confined
def test_pytest_counts_from_the_shipped_repo_task() -> None:
    from rigbench.suites.agent._task import load_task

    task = load_task("cart_bugs")
    sb = Workdir.copy_of(task.path / "project")
    try:
        res = run_pytest(sb.root, "tests", Limits(), allow_unconfined=False)
    finally:
        sb.cleanup()
    assert (res.passed, res.failed) == (7, 5), res.output_tail


_HOOK = """import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rep.outcome = "passed"
"""


@confined
def test_conftest_hook_in_the_working_copy_works_there_but_never_reaches_the_grader() -> None:
    from rigbench.suites.agent._task import load_task

    task = load_task("cart_bugs")
    pristine = task.path / "project"
    sb = Workdir.copy_of(pristine)
    try:
        for name in ("conftest.py", "app/conftest.py", "sitecustomize.py", "app/evil.pth"):
            sb.write_file(name, _HOOK if name.endswith("conftest.py") else "import os\n")
        sb.write_file("pytest.ini", "[pytest]\naddopts = -p no:terminal\n")
        sb.write_file("app/tax.py", sb.read_file("app/tax.py") + "\n# touched\n")
        sb.write_file("notes.txt", "hello")
        # The adversary is real: in the model's own copy the hook turns all 5 failures into passes.
        own = run_pytest(sb.root, "tests", Limits(), allow_unconfined=False)
        assert (own.passed, own.failed) == (12, 0), own.output_tail
        grade, taken, left = sb.grading_copy(pristine, ["app/*.py"], protected=("tests",))
        try:
            assert taken == ["app/tax.py"]
            assert sorted(x.split(" ")[0] for x in left) == [
                "app/conftest.py", "app/evil.pth", "conftest.py", "notes.txt", "pytest.ini", "sitecustomize.py"]
            res = run_pytest(grade.root, "tests", Limits(), allow_unconfined=False)
        finally:
            grade.cleanup()
        assert (res.passed, res.failed) == (7, 5), res.output_tail
    finally:
        sb.cleanup()
    assert {"conftest.py", "sitecustomize.py", "*.pth", "pytest.ini", "pyproject.toml"} <= set(GRADER_NEVER_COPIES)


@confined
async def test_repo_task_grade_ignores_the_hook_and_fails_code_that_touches_pytest(tmp_path: Path) -> None:
    from rigbench.suites.agent._grading import grade_repo_fix
    from rigbench.suites.agent._task import load_task

    task = load_task("cart_bugs")
    sb = Workdir.copy_of(task.path / "project")
    try:
        before = run_pytest(sb.root, "tests", Limits(), allow_unconfined=False)
        sb.write_file("conftest.py", _HOOK)
        hooked = await grade_repo_fix(task, sb, before, limits=Limits(), allow_unconfined=False)
        assert not hooked.passed and hooked.tests_failed_after == 5
        assert hooked.sandbox["confinement"] == "bwrap" and "conftest.py" in " ".join(hooked.sandbox["not_graded"])
        # The same hook smuggled into the package it may change: imported by the tests, so it
        # cannot be left out; it is graded failed for referring to pytest.
        sb.write_file("app/__init__.py", sb.read_file("app/__init__.py") + "\nimport pytest  # noqa\n")
        smuggled = await grade_repo_fix(task, sb, before, limits=Limits(), allow_unconfined=False)
        assert not smuggled.passed and "refer(s) to pytest" in smuggled.grade_detail
    finally:
        sb.cleanup()


@confined
def test_symlinks_left_by_sandboxed_code_are_never_followed_by_rigbench(tmp_path: Path) -> None:
    # Code in the sandbox plants links where rigbench writes its own files next time; rigbench
    # (root in CI) must replace them, not write through them to the host.
    victim = tmp_path / "host-file.txt"
    victim.write_text("host data")
    work = tmp_path / "work"
    work.mkdir()
    (work / "tests").mkdir()
    (work / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    (work / ".rigbench-pytest.ini").symlink_to(victim)
    (work / ".tmp").symlink_to(tmp_path)
    res = run_pytest(work, "tests", FAST, allow_unconfined=False)
    assert (res.passed, res.failed) == (1, 0), res.output_tail
    assert victim.read_text() == "host data"
    assert not (work / ".tmp").is_symlink() and not (work / ".rigbench-pytest.ini").is_symlink()


async def test_agent_tasks_refuse_without_a_sandbox_and_mark_unconfined_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rigbench.rig import RigInfo
    from rigbench.sandbox import _confine, _run
    from rigbench.suites import SuiteContext
    from rigbench.suites.agent import AgentSettings, AgentSuite
    from rigbench.suites.agent._grading import grade_repo_fix
    from rigbench.suites.agent._task import load_task

    monkeypatch.setattr(_run, "confinement", lambda: _confine.Confinement("unconfined", "no bwrap here"))
    rig = RigInfo(engine="llamacpp", model="m", base_url="http://x/v1", server_root="http://x")
    ctx = SuiteContext(client=None, writer=None, rig=rig)  # type: ignore[arg-type]
    with pytest.raises(SandboxUnavailable, match="--allow-unconfined"):
        await AgentSuite(AgentSettings(), parts=["tasks"]).run(ctx)  # refused before any request: the client is None
    task = load_task("cart_bugs")
    sb = Workdir.copy_of(task.path / "project")
    try:
        before = run_pytest(sb.root, "tests", Limits(), allow_unconfined=True)
        rec = await grade_repo_fix(task, sb, before, limits=Limits(), allow_unconfined=True)
    finally:
        sb.cleanup()
    assert rec.tests_failed_after == 5 and not rec.passed
    assert rec.sandbox["confinement"] == "unconfined" and "UNCONFINED" in rec.sandbox["network"]


@confined
def test_wall_limit_kills_detached_children_too(tmp_path: Path) -> None:
    import secrets
    import subprocess
    import time

    name = f"detach-{secrets.token_hex(6)}.py"
    (tmp_path / name).write_text("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
                                 "time.sleep(60)\n")
    out = run_confined([sandbox_python(False), "-I", "-S", name], tmp_path, FAST._replace(wall_s=1.0),
                       allow_unconfined=False)
    assert out.timed_out
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", name], capture_output=True, text=True).stdout
    assert not left.strip(), f"sandboxed processes survived the wall-time kill: {left}"
