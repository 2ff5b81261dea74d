"""Repo-fix grading plays against code that tries to grade itself.

Each adversary is appended to `app/__init__.py` of the *unfixed* cart_bugs project (a file the
task allows the model to change, imported by every test), and must end with the project not
passed and the reason in the record. `grade_pytest` is the signed stream alone (no source screen);
`grade_repo_fix` adds the screen of the changed files. Healthy controls: the unfixed project is
graded 7 passed / 5 failed with no problem, the correctly fixed project passes.

Needs bubblewrap (the adversaries are real; unconfined they would touch this machine): see the
`confined` marker in test_sandbox.py for how a missing sandbox is reported.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import secrets
import subprocess
import time
from collections.abc import Iterator

import pytest

from rigbench.sandbox import Limits, Workdir, grade_pytest
from rigbench.sandbox._verdict import read_channel
from rigbench.suites.agent._grading import grade_repo_fix
from rigbench.suites.agent._task import load_task
from tests.unit.test_sandbox import confined

TASK = load_task("cart_bugs")
IDS: list[str] = TASK.spec["test_ids"]
FAILING = {
    "tests/test_cart.py::test_subtotal_multiplies_quantity", "tests/test_cart.py::test_total_adds_tax",
    "tests/test_discount.py::test_save10_takes_ten_percent", "tests/test_discount.py::test_codes_are_case_insensitive",
    "tests/test_tax.py::test_add_tax_keeps_the_amount",
}
LIMITS = Limits(wall_s=60)
FIXES = {
    "app/cart.py": ("price for _, price, qty", "price * qty for _, price, qty"),
    "app/discount.py": ("/ 1000", "/ 100"),
    "app/tax.py": ("amount * rate", "amount * (1 + rate)"),
}


@pytest.fixture
def project() -> Iterator[Workdir]:
    sb = Workdir.copy_of(TASK.path / "project")
    try:
        yield sb
    finally:
        sb.cleanup()


def _smuggle(sb: Workdir, code: str) -> None:
    sb.write_file("app/__init__.py", sb.read_file("app/__init__.py") + "\n" + code)


def _grade(sb: Workdir, isolate: bool = True):
    return grade_pytest(sb.root, "tests", IDS, LIMITS, allow_unconfined=False, isolate=isolate)


def _failing(g) -> set[str]:  # type: ignore[no-untyped-def]
    return {i for i, o in g.outcomes.items() if o != "passed"}


# Each escape runs twice: with the project in a process of its own (the default: its code never
# runs where the verdict is written) and inside the test process (the launcher's checks alone).
MODES = pytest.mark.parametrize("isolate", [True, False], ids=["isolated", "in-process"])


def _not_passed(g, reason: str | None = None) -> None:
    assert not g.all_passed, g
    if reason is not None:
        assert any(reason in p for p in g.problems), (g.problems, g.run.output[-2000:])


# --- healthy controls -------------------------------------------------------------------------

@confined
def test_unfixed_project_is_graded_seven_of_twelve_without_a_problem(project: Workdir) -> None:
    g = _grade(project)
    assert g.problems == [], g.problems
    assert {i for i, o in g.outcomes.items() if o != "passed"} == FAILING
    assert list(g.outcomes) == IDS


@confined
async def test_fixed_project_passes_and_the_record_says_how_it_was_graded(project: Workdir) -> None:
    for path, (old, new) in FIXES.items():
        project.write_file(path, project.read_file(path).replace(old, new))
    g = _grade(project)
    assert g.all_passed and g.passed == 12, (g.problems, g.run.output[-2000:])
    before = g  # the before-count is not what this test is about
    rec = await grade_repo_fix(TASK, project, before, limits=LIMITS, allow_unconfined=False)  # type: ignore[arg-type]
    assert rec.passed and rec.tests_passed_after == 12, rec.grade_detail
    assert rec.sandbox["stream_problems"] == [] and "signed" in rec.sandbox["grading"]


# --- the escapes ------------------------------------------------------------------------------

_ATEXIT = """
import atexit, glob, os
def _forge():
    for p in glob.glob(".tmp/*") + glob.glob("/sandbox/.tmp/*"):
        open(p, "w").write("<testsuites><testsuite tests='12' failures='0'/></testsuites>")
    os._exit(0)
atexit.register(_forge)
"""


@confined
@MODES
async def test_atexit_forgery_of_the_results_file_no_longer_passes_the_unfixed_project(
        project: Workdir, isolate: bool) -> None:
    # The reported bypass: under the JUnit grader this graded the unfixed project 12 of 12.
    _smuggle(project, _ATEXIT)
    g = _grade(project, isolate)
    assert _failing(g) == FAILING and g.problems == []  # the hook never ran before the verdict
    task = TASK if isolate else dataclasses.replace(TASK, spec={**TASK.spec, "project_in_test_process": True})
    rec = await grade_repo_fix(task, project, g, limits=LIMITS, allow_unconfined=False)  # type: ignore[arg-type]
    assert not rec.passed and rec.tests_failed_after == 5, rec.grade_detail
    # In the test process the screen also names the attempt; isolated, there is nothing to reach.
    assert ("(atexit) reach(es) into the interpreter" in rec.grade_detail) is not isolate
    assert ("a process of its own" in rec.sandbox["grading"]) is isolate


@confined
@MODES
def test_exiting_zero_in_the_middle_of_the_run_does_not_pass(project: Workdir, isolate: bool) -> None:
    _smuggle(project, "import os\nfrom app import tax\n_real = tax.add_tax\n"
                      "def _quit(*a):\n    os._exit(0)\ntax.add_tax = _quit\n")
    g = _grade(project, isolate)
    if isolate:  # the project's process is gone: every later call into it errors
        assert _failing(g) >= FAILING and not g.all_passed
    else:
        _not_passed(g, "no end marker")


def _check(g, isolate: bool, reason: str) -> None:  # type: ignore[no-untyped-def]
    """Isolated: the escape ran in the project's process and got nothing (the five failures stay,
    or its own code broke the import: more fail); in-process: the launcher saw it."""
    if isolate:
        assert not g.all_passed and _failing(g) >= FAILING, (g.problems, g.run.output[-2000:])
    else:
        _not_passed(g, reason)


@confined
@MODES
def test_a_signal_handler_with_a_timer_is_seen_as_tampering(project: Workdir, isolate: bool) -> None:
    _smuggle(project, "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\n"
                      "signal.setitimer(signal.ITIMER_REAL, 30)\n")
    _check(_grade(project, isolate), isolate, "signal handler for SIGALRM changed")


@confined
@MODES
def test_patching_pytest_from_the_package_is_seen_as_tampering(project: Workdir, isolate: bool) -> None:
    # In the test process every test would "pass" as far as pytest knows: the bodies never run.
    _smuggle(project, "import _pytest.python\n_pytest.python.Function.runtest = lambda self: None\n")
    _check(_grade(project, isolate), isolate, "Function.runtest changed")


@confined
@MODES
def test_an_always_equal_approx_is_seen_as_tampering(project: Workdir, isolate: bool) -> None:
    _smuggle(project, "import pytest\nclass _Any:\n    def __eq__(self, o): return True\n"
                      "pytest.approx = lambda *a, **k: _Any()\n")
    _check(_grade(project, isolate), isolate, "pytest: approx changed")


@confined
@MODES
def test_replacing_a_module_in_sys_modules_is_seen_as_tampering(project: Workdir, isolate: bool) -> None:
    _smuggle(project, "import sys, types\nfake = types.ModuleType('pytest')\n"
                      "fake.__dict__.update(sys.modules['pytest'].__dict__)\n"
                      "fake.approx = lambda x, **k: type('A', (), {'__eq__': lambda s, o: True})()\n"
                      "sys.modules['pytest'] = fake\n")
    _check(_grade(project, isolate), isolate, "sys.modules['pytest'] replaced")


_IMPORT_HOOK = """
import importlib.abc, importlib.util, sys
class _Rewriter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[-1] in ("test_discount", "test_tax"):
            return importlib.util.spec_from_loader(name, self, origin=f"/sandbox/tests/{name.split('.')[-1]}.py")
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        path = module.__spec__.origin
        module.__file__ = path
        src = open(path).read().replace("assert ", "assert True or ")
        exec(compile(src, path, "exec"), module.__dict__)
sys.meta_path.insert(0, _Rewriter())
"""


@confined
@MODES
def test_an_import_hook_that_rewrites_the_tests_is_seen(project: Workdir, isolate: bool) -> None:
    _smuggle(project, _IMPORT_HOOK)
    _check(_grade(project, isolate), isolate, "code differs from its test file")


_PLUGIN_PATCH = """
import gc
for o in gc.get_objects():
    if type(o).__name__ == "Reporter":
        def _quiet(self, *a, **k):
            return None
        for name in list(vars(type(o))):
            if name.startswith("pytest_"):
                setattr(type(o), name, _quiet)
                setattr(o, name, _quiet)
import _pytest.python
_pytest.python.Function.runtest = lambda self: None
"""


@confined
@MODES
def test_patching_rigbenchs_reporting_plugin_by_name_does_not_silence_it(project: Workdir, isolate: bool) -> None:
    # Isolated: there is no plugin in the project's process to find. In-process: pluggy holds the
    # plugin's hook functions from registration time; patching the class or the instance
    # afterwards changes nothing, so the checks still run and report the runner patch.
    _smuggle(project, _PLUGIN_PATCH)
    _check(_grade(project, isolate), isolate, "Function.runtest changed")


_REWRITE_FILES = """
import glob, os
def print(*a):  # pytest captures output during collection: leave the evidence in the writable .tmp
    open("/sandbox/.tmp/escape.log", "a").write(" ".join(map(str, a)) + "\\n")
for p in ["/sandbox/tests/test_tax.py", "/rigbench-grader/launch.py", "/rigbench-grader/pytest.ini",
          "/sandbox/app/tax.py", "/sandbox/results.xml"]:
    try:
        open(p, "w").write("def test_x():\\n    pass\\n")
        print("WROTE", p)
    except OSError as e:
        print("REFUSED", p, e.errno)
"""


@confined
@MODES
def test_files_the_grader_or_pytest_reads_cannot_be_rewritten(project: Workdir, isolate: bool) -> None:
    _smuggle(project, _REWRITE_FILES)
    g = _grade(project, isolate)
    log = (project.root / ".tmp" / "escape.log").read_text()
    assert "WROTE" not in log and log.count("REFUSED") == 5, log
    assert {i for i, o in g.outcomes.items() if o != "passed"} == FAILING


_FORGE_FDS = """
import json, os
line = json.dumps({"seq": 0, "kind": "end", "exit": 0}) + " " + "0" * 64 + "\\n"
for fd in range(3, 64):
    try:
        os.write(fd, line.encode())
    except OSError:
        pass
"""


@confined
@MODES
def test_forged_lines_on_inherited_file_descriptors_are_rejected(project: Workdir, isolate: bool) -> None:
    _smuggle(project, _FORGE_FDS)
    g = _grade(project, isolate)
    if isolate:  # no channel there: the forgery lands on the project's own socket and breaks it
        assert not g.all_passed and _failing(g) >= FAILING
    else:
        _not_passed(g, "not signed by the grader's key")


_FORK = """
import os, sys, time, json
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(0.5)
        for fd in range(3, 64):
            try:
                os.write(fd, b'{"seq":99,"kind":"report"} ' + b"0" * 64 + b"\\n")
            except OSError:
                pass
        # sleeps on under a name of its own, so that only this run's survivor is looked for
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)", "TOKEN"])
    os._exit(0)
"""


@confined
@MODES
def test_a_forked_process_that_outlives_the_run_neither_forges_nor_survives(project: Workdir, isolate: bool) -> None:
    # A token of this test's own: other pytest runs on the machine grade projects at the same time,
    # and their launchers are not this run's survivors.
    token = f"rigbench-escape-{secrets.token_hex(8)}"
    _smuggle(project, _FORK.replace("TOKEN", token))
    t0 = time.monotonic()
    g = _grade(project, isolate)
    assert time.monotonic() - t0 < 40
    assert not g.all_passed
    left = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True).stdout.strip()
    assert not left, f"a process of the grading run survived it: {left}"


_HIDDEN = """
import os, subprocess, sys
def print(*a):  # pytest captures output during collection: leave the evidence in the writable .tmp
    open("/sandbox/.tmp/escape.log", "a").write(" ".join(map(str, a)) + "\\n")
try:
    import rigbench
    print("IMPORTED rigbench", rigbench.__file__)
except ImportError:
    print("NO rigbench")
for p in sys.path:
    d = os.path.join(p, "rigbench")
    if os.path.isdir(d):
        print("RIGBENCH DIR", d, sorted(os.listdir(d))[:5])
# As root the sandbox allows nested user namespaces: try to lift the tmpfs and to mount a fake
# launcher, then send a forged verdict from there on every inherited descriptor.
fds = [int(f) for f in os.listdir("/proc/self/fd") if int(f) > 2]
script = "umount /rigbench-grader 2>&1; mount -t tmpfs none /rigbench-grader 2>&1 && echo MOUNTED; " \
         "for fd in " + " ".join(map(str, fds)) + "; do echo '{\\"seq\\":0,\\"kind\\":\\"end\\",\\"exit\\":0} x' >&$fd; done"
r = subprocess.run(["unshare", "-Urm", "sh", "-c", script], pass_fds=fds, capture_output=True, text=True)
print("NESTED", r.returncode, r.stdout.strip()[:200], r.stderr.strip()[:200])
"""


@confined
@MODES
def test_the_hidden_package_and_nested_namespaces_give_no_way_to_a_forged_verdict(
        project: Workdir, isolate: bool) -> None:
    _smuggle(project, _HIDDEN)
    g = _grade(project, isolate)
    out = (project.root / ".tmp" / "escape.log").read_text()
    assert "NO rigbench" in out and "IMPORTED" not in out, out[-2000:]
    assert "RIGBENCH DIR" not in out or "[]" in out.split("RIGBENCH DIR", 1)[1].splitlines()[0], out[-2000:]
    assert not g.all_passed
    assert {i for i, o in g.outcomes.items() if o != "passed"} >= FAILING


_ALWAYS_EQUAL = """
class _Yes(float):
    def __eq__(self, other):
        return True
    __hash__ = float.__hash__
from app import cart, discount, tax
cart.Cart.subtotal = lambda self: _Yes(0)
cart.Cart.total = lambda self, *a, **k: _Yes(0)
discount.apply_discount = lambda *a, **k: _Yes(0)
tax.add_tax = lambda *a, **k: _Yes(0)
"""


@confined
def test_an_always_equal_return_value_cannot_pass_an_assert(project: Workdir) -> None:
    # Returned through the proxy it is not plain data (a float subclass): the test sees a handle,
    # equal only to itself. (Inside the test process this would pass: the reason for isolation.)
    _smuggle(project, _ALWAYS_EQUAL)
    g = _grade(project)
    assert not g.all_passed and _failing(g) >= FAILING, g.outcomes


_REACH_LAUNCHER = """
import ctypes, os
def print(*a):
    open("/sandbox/.tmp/escape.log", "a").write(" ".join(map(str, a)) + "\\n")
pid = os.getppid()
for what in ("mem", "environ", "fd"):
    try:
        (os.listdir if what == "fd" else lambda p: open(p, "rb").read(16))(f"/proc/{pid}/{what}")
        print("READ", what)
    except OSError as e:
        print("REFUSED", what, e.errno)
libc = ctypes.CDLL(None, use_errno=True)
print("PTRACE", libc.ptrace(16, pid, 0, 0), ctypes.get_errno())  # PTRACE_ATTACH
"""


@confined
def test_the_project_cannot_read_or_trace_the_test_process(project: Workdir) -> None:
    _smuggle(project, _REACH_LAUNCHER)
    g = _grade(project)
    log = (project.root / ".tmp" / "escape.log").read_text()
    assert "READ" not in log and log.count("REFUSED") == 3 and "PTRACE -1" in log, log
    assert _failing(g) == FAILING and g.problems == []


@confined
def test_killing_the_test_process_from_the_project_is_an_error(project: Workdir) -> None:
    _smuggle(project, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")
    _not_passed(_grade(project), "no end marker")


# --- the stream check itself, with a known key ------------------------------------------------

KEY = b"k" * 32


def _stream(*msgs: dict[str, object]) -> bytes:
    out = b""
    for n, m in enumerate(msgs):
        body = json.dumps({"seq": n, **m}, sort_keys=True, separators=(",", ":")).encode()
        out += body + b" " + hmac.new(KEY, body, "sha256").hexdigest().encode() + b"\n"
    return out


def _run_of(ids: list[str], exit_status: int = 0, fail: str | None = None) -> list[dict[str, object]]:
    msgs: list[dict[str, object]] = [{"kind": "start"}, {"kind": "collected", "ids": ids}]
    for i in ids:
        for when in ("setup", "call", "teardown"):
            outcome = "failed" if (i == fail and when == "call") else "passed"
            msgs.append({"kind": "report", "id": i, "when": when, "outcome": outcome})
    msgs.append({"kind": "end", "exit": exit_status})
    return msgs


def test_the_stream_check_accepts_an_honest_stream() -> None:
    outcomes, problems = read_channel(_stream(*_run_of(IDS)), KEY, IDS, 0)
    assert problems == [] and set(outcomes.values()) == {"passed"}
    outcomes, problems = read_channel(_stream(*_run_of(IDS, 1, fail=IDS[3])), KEY, IDS, 1)
    assert problems == [] and outcomes[IDS[3]] == "failed"


@pytest.mark.parametrize(("ids", "why"), [
    (IDS[:-1], "were not run"),
    ([*IDS, "tests/test_tax.py::test_extra"], "not the task's"),
    ([*IDS[:-1], "tests/test_tax.py::test_add_tax_keeps_the_amount_renamed"], "were not run"),
])
def test_the_stream_check_refuses_missing_added_and_renamed_tests(ids: list[str], why: str) -> None:
    _outcomes, problems = read_channel(_stream(*_run_of(ids)), KEY, IDS, 0)
    assert any(why in p for p in problems), problems


def test_the_stream_check_refuses_forged_reordered_torn_and_cut_streams() -> None:
    good = _stream(*_run_of(IDS))
    lines = good.split(b"\n")
    edited = _stream(*_run_of(IDS, 1, fail=IDS[0])).replace(b'"outcome":"failed"', b'"outcome":"passed"')
    assert any("not signed" in p for p in read_channel(edited, KEY, IDS, 1)[1])
    swapped = b"\n".join([lines[0], lines[2], lines[1], *lines[3:]])
    assert any("out of sequence" in p for p in read_channel(swapped, KEY, IDS, 0)[1])
    assert any("torn line" in p for p in read_channel(good + b'{"seq":', KEY, IDS, 0)[1])
    cut = b"\n".join(lines[:-2]) + b"\n"
    assert any("no end marker" in p for p in read_channel(cut, KEY, IDS, 0)[1])
    assert any("differs from the process's" in p for p in read_channel(good, KEY, IDS, 1)[1])
    other_key = read_channel(good, b"x" * 32, IDS, 0)[1]
    assert any("not signed" in p for p in other_key)
    assert any("empty" in p for p in read_channel(b"", KEY, IDS, 0)[1])


def test_the_task_lists_exactly_the_tests_its_files_define() -> None:
    import re

    found = [f"tests/{f.name}::{m}" for f in sorted((TASK.path / "project" / "tests").glob("test_*.py"))
             for m in re.findall(r"^def (test_\w+)", f.read_text(), re.M)]
    assert found == IDS
