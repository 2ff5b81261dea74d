"""Grade a project's tests from what the code under test cannot write.

The tests run in the sandbox under rigbench's launcher (`_grade_launch.py`, mounted read-only),
with the working copy read-only except its `.tmp`. The launcher streams each test's outcome, as it
finishes, onto a pipe whose read end only this process holds; every line carries a sequence number
and an HMAC under a per-run key that the launcher read from a second pipe (and closed) before any
model-written code ran. The verdict comes from that stream alone, checked here: every line signed
and in sequence, the collected test ids exactly the task's own list (none missing, added or
renamed), an outcome for each, no tampering seen by the launcher's checks, and the end marker's
exit status equal to the process's. No file of the working copy is read.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import shutil
import tempfile
import threading
from importlib.resources import files
from pathlib import Path
from typing import Any, NamedTuple

from rigbench.sandbox._confine import SANDBOX_DIR
from rigbench.sandbox._run import Limits, RunOutcome, own_dir, run_confined, sandbox_python

__all__ = ["GRADER_DIR", "GradedTests", "grade_pytest", "project_packages", "read_channel"]

GRADER_DIR = "/rigbench-grader"  # where the launcher appears inside the sandbox (read-only)
_INI = "[pytest]\naddopts =\n"
_CHANNEL_MAX_BYTES = 4 * 1024 * 1024


class GradedTests(NamedTuple):
    # test id -> passed | failed | error | skipped | xfailed | deselected | missing: only "passed" is a pass
    outcomes: dict[str, str]
    problems: list[str]  # why the stream cannot be trusted, or what the launcher saw tampered with
    run: RunOutcome

    @property
    def passed(self) -> int:
        return sum(o == "passed" for o in self.outcomes.values())

    @property
    def failed(self) -> int:
        return len(self.outcomes) - self.passed

    @property
    def all_passed(self) -> bool:
        return not self.problems and bool(self.outcomes) and self.failed == 0


def _combine(phases: dict[str, str]) -> str:
    """One test's outcome from its setup/call/teardown reports (a skip that was an xfail: "xfailed")."""
    if phases.get("call") == "failed":
        return "failed"
    if "failed" in phases.values():
        return "error"  # setup or teardown failed
    if phases.get("setup") in ("skipped", "xfailed"):
        return phases["setup"]
    if "call" not in phases or "teardown" not in phases:
        return "error"  # the test started and never finished
    return phases["call"]


def read_channel(raw: bytes, key: bytes, expected: list[str] | None, returncode: int | None
                 ) -> tuple[dict[str, str], list[str]]:
    """Per-test outcomes and problems from the raw channel bytes (see the module docstring)."""
    problems: list[str] = []
    phases: dict[str, dict[str, str]] = {}
    collected: list[str] | None = None
    deselected: list[str] = []
    end: int | None = None
    lines = raw.split(b"\n")
    if lines and lines[-1]:
        problems.append(f"the result channel ends in a torn line: {lines[-1][:80]!r}")
    for n, line in enumerate(lines[:-1]):
        body, _, tag = line.rpartition(b" ")
        want = hmac.new(key, body, "sha256").hexdigest().encode()
        if not hmac.compare_digest(tag, want):
            problems.append(f"line {n} of the result channel is not signed by the grader's key "
                            f"(written by the code under test?): {line[:80]!r}")
            break
        msg: dict[str, Any] = json.loads(body)
        if msg.get("seq") != n:
            problems.append(f"line {n} of the result channel is out of sequence (seq {msg.get('seq')!r})")
            break
        if end is not None:
            problems.append("the result channel goes on after its end marker")
            break
        kind = msg.get("kind")
        if kind == "collected":
            collected = [str(i) for i in msg.get("ids", [])]
        elif kind == "report":
            outcome = str(msg["outcome"])
            phases.setdefault(str(msg["id"]), {})[str(msg["when"])] = (
                "xfailed" if outcome == "skipped" and msg.get("xfail") else outcome)
        elif kind == "deselected":
            deselected += [str(i) for i in msg.get("ids", [])]
        elif kind == "tampered":
            problems.append(f"tampering seen {msg.get('where')}: {'; '.join(map(str, msg.get('what', [])))}")
        elif kind == "collect_error":
            how = "was skipped" if msg.get("outcome") == "skipped" else "failed"
            problems.append(f"collecting {msg.get('id')} {how}")
        elif kind == "end":
            end = int(msg["exit"])
    if not raw:
        problems.append("the result channel is empty: the launcher never started")
    elif end is None and not problems:
        problems.append("the result channel has no end marker: the test process stopped before pytest finished "
                        f"(exit status {returncode})")
    elif end is not None and end != returncode:
        problems.append(f"pytest's exit status on the channel ({end}) differs from the process's ({returncode})")
    if deselected:
        # rigbench's pytest command deselects nothing: what did was not the task's doing
        problems.append(f"{len(deselected)} tests were deselected: {', '.join(deselected[:5])}")
    ids = list(expected) if expected is not None else list(dict.fromkeys([*(collected or phases), *deselected]))
    if expected is not None:
        got = collected if collected is not None else list(phases)
        missing = [i for i in expected if i not in got and i not in deselected]
        added = [i for i in got if i not in expected] + [i for i in phases if i not in expected and i not in got]
        if missing:
            problems.append(f"{len(missing)} of the task's tests were not run: {', '.join(missing[:5])}")
        if added:
            problems.append(f"tests that are not the task's were run: {', '.join(added[:5])}")
    outcomes = {i: _combine(phases[i]) if i in phases else "deselected" if i in deselected else "missing"
                for i in ids}
    return outcomes, problems


def project_packages(work: Path, tests_dir: str) -> list[str]:
    """The importable top-level packages (namespace ones too) and modules of `work`, other than its tests."""
    skip = {Path(tests_dir).parts[0], "conftest"}
    names = [p.name if p.is_dir() else p.stem for p in sorted(work.iterdir())
             if not p.name.startswith((".", "__")) and not p.is_symlink()
             and ((p.is_dir() and any(p.glob("*.py"))) or (p.is_file() and p.suffix == ".py"))]
    return [n for n in names if n not in skip and n.isidentifier()]


def grade_pytest(work: Path, tests_dir: str, expected: list[str] | None, limits: Limits, *,
                 allow_unconfined: bool, isolate: bool = True) -> GradedTests:
    """Run the tests of `work` under the grading launcher; the verdict from the signed stream alone.

    `expected` is the task's own list of test ids (`tests/test_x.py::test_y`); None accepts what
    was collected (code that must not choose its own tests should always pass a list). With
    `isolate` (the default) the project's packages run in a process of their own and the tests
    reach them through proxies (plain data only; see `_grade_remote.py`); without it the project
    runs inside the test process and only the launcher's tamper checks guard the verdict.
    """
    key = secrets.token_bytes(32)
    own_dir(work / ".tmp")
    launcher = Path(tempfile.mkdtemp(prefix="rigbench-grader-"))
    key_r, key_w = os.pipe()
    chan_r, chan_w = os.pipe()
    received = bytearray()
    try:
        launcher.chmod(0o755)
        script = launcher / "launch.py"
        script.write_text((files("rigbench.sandbox") / "_grade_launch.py").read_text(encoding="utf-8"))
        remote = launcher / "remote.py"
        remote.write_text((files("rigbench.sandbox") / "_grade_remote.py").read_text(encoding="utf-8"))
        (launcher / "pytest.ini").write_text(_INI)
        for p in (script, remote, launcher / "pytest.ini"):
            p.chmod(0o644)
        packages = ",".join(project_packages(work, tests_dir)) if isolate else ""
        os.write(key_w, key)
        os.close(key_w)
        key_w = -1
        reader = threading.Thread(target=_drain, args=(chan_r, received), daemon=True)
        reader.start()
        confined = _confined(allow_unconfined)
        where = GRADER_DIR if confined else str(launcher)
        root = SANDBOX_DIR if confined else str(work)
        run = run_confined(
            [sandbox_python(True), "-I", f"{where}/launch.py", str(key_r), str(chan_w), root, tests_dir,
             packages or "-", "-q", "-p", "no:cacheprovider", "-c", f"{where}/pytest.ini", "--rootdir", root, "--assert=plain"],
            work, limits, allow_unconfined=allow_unconfined, site_packages=True, extra_fds=[key_r, chan_w],
            read_only=True, ro_binds=[(launcher, GRADER_DIR)],
        )
        os.close(chan_w)
        chan_w = -1
        reader.join(timeout=5)
        lingering = reader.is_alive()
    finally:
        for fd in (key_r, key_w, chan_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        shutil.rmtree(launcher, ignore_errors=True)
    outcomes, problems = read_channel(bytes(received), key, expected, run.returncode)
    if run.timed_out:
        problems.insert(0, f"timed out after {limits.wall_s:g} s")
    if lingering:
        problems.append("a process of the test run outlived it with the result channel open")
    if len(received) >= _CHANNEL_MAX_BYTES:
        problems.append(f"the result channel was flooded (over {_CHANNEL_MAX_BYTES} bytes)")
    return GradedTests(outcomes, problems, run)


def _confined(allow_unconfined: bool) -> bool:
    from rigbench.sandbox._run import require_confinement

    return require_confinement(allow_unconfined).kind == "bwrap"


def _drain(fd: int, into: bytearray) -> None:
    try:
        while chunk := os.read(fd, 65536):
            if len(into) < _CHANNEL_MAX_BYTES:
                into += chunk[: _CHANNEL_MAX_BYTES - len(into)]
    finally:
        os.close(fd)
