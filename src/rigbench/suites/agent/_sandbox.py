"""The task directory the model works in, and the limited subprocess its code runs in.

Model-written code is untrusted: it runs in a temporary copy of the task, in a child process with
CPU, address-space, file-size (= output) and wall-time limits, and without network where the OS
lets an unprivileged process drop it (`unshare -rn`). File tools resolve every path inside the
task directory and refuse `..`, absolute paths and symlinks that lead out.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "PathRefused",
    "RunLimits",
    "RunOutcome",
    "Sandbox",
    "TestOutcome",
    "network_isolation",
    "run_limited",
]

_READ_LIMIT_BYTES = 64 * 1024
_WRITE_LIMIT_BYTES = 256 * 1024


class PathRefused(ValueError):
    """A file-tool path that leaves the task directory. The model's error: reported back to it."""


class RunLimits(NamedTuple):
    cpu_s: int = 30
    memory_bytes: int = 1024 * 1024 * 1024
    wall_s: float = 60.0
    output_bytes: int = 1024 * 1024


class RunOutcome(NamedTuple):
    returncode: int | None  # None when killed for the wall-time limit
    output: str  # stdout+stderr, the last `output_bytes` at most
    timed_out: bool
    network_isolated: bool
    isolation: str  # how, or why not


class TestOutcome(NamedTuple):
    passed: int
    failed: int  # failures + errors
    failed_ids: list[str]
    output_tail: str
    run: RunOutcome


@functools.cache
def network_isolation() -> tuple[list[str], str]:
    """The argv prefix that runs a command without network here, and a note saying how (or not)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return [], "none: `unshare` not found, tests run with the host network"
    for flags in (["-rn"], ["-n"]):
        try:
            ok = subprocess.run([unshare, *flags, "true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return [unshare, *flags], f"unshare {' '.join(flags)} (empty network namespace)"
    return [], "none: `unshare -n` is not permitted here, tests run with the host network"


def _limit(limits: RunLimits) -> None:  # runs in the child between fork and exec
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.output_bytes, limits.output_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.setsid()


def run_limited(argv: list[str], cwd: Path, limits: RunLimits, *, isolate_network: bool = True) -> RunOutcome:
    """Run `argv` in `cwd` under `limits`; output goes through a file so its size is capped too."""
    prefix, note = network_isolation() if isolate_network else ([], "not requested")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "LANG": "C.UTF-8",
    }
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [*prefix, *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: _limit(limits),
        )
        timed_out = False
        try:
            code: int | None = proc.wait(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, 9)
            proc.wait()
            code = None
        out.seek(0, os.SEEK_END)
        size = out.tell()
        out.seek(max(0, size - limits.output_bytes))
        text = out.read().decode(errors="replace")
    return RunOutcome(code, text, timed_out, bool(prefix), note)


class Sandbox:
    """A temporary copy of a task project. Every path the model names is checked here."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.refused = 0

    @classmethod
    def copy_of(cls, project: Path) -> Sandbox:
        tmp = Path(tempfile.mkdtemp(prefix="rigbench-task-"))
        dest = tmp / "project"
        shutil.copytree(
            project,
            dest,
            symlinks=True,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"),
        )
        return cls(dest)

    def cleanup(self) -> None:
        shutil.rmtree(self.root.parent, ignore_errors=True)

    def resolve(self, rel: str) -> Path:
        """The real path of `rel` inside the task directory, or PathRefused saying why not."""
        if not isinstance(rel, str) or not rel.strip():
            self.refused += 1
            raise PathRefused("path must be a non-empty relative path inside the project")
        if rel.startswith(("/", "\\", "~")) or (len(rel) > 1 and rel[1] == ":"):
            self.refused += 1
            raise PathRefused(f"absolute path {rel!r} refused: use a path relative to the project root")
        if ".." in Path(rel).parts:
            self.refused += 1
            raise PathRefused(f"path {rel!r} refused: '..' may not leave the project directory")
        real = (self.root / rel).resolve()
        if real != self.root and self.root not in real.parents:
            self.refused += 1
            raise PathRefused(f"path {rel!r} refused: it resolves outside the project (symlink)")
        return real

    def read_file(self, rel: str) -> str:
        p = self.resolve(rel)
        if not p.is_file():
            raise FileNotFoundError(f"no such file: {rel}")
        data = p.read_bytes()[:_READ_LIMIT_BYTES]
        return data.decode(errors="replace")

    def write_file(self, rel: str, content: str) -> str:
        p = self.resolve(rel)
        raw = content.encode()
        if len(raw) > _WRITE_LIMIT_BYTES:
            raise ValueError(f"content of {len(raw)} bytes is over the {_WRITE_LIMIT_BYTES}-byte limit")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(raw)
        return f"wrote {len(raw)} bytes to {rel}"

    def list_files(self, rel: str = ".") -> list[str]:
        base = self.resolve(rel or ".")
        if not base.is_dir():
            raise FileNotFoundError(f"no such directory: {rel}")
        out = []
        for p in sorted(base.rglob("*")):
            if "__pycache__" in p.parts or ".pytest_cache" in p.parts:
                continue
            if p.is_file() and not p.is_symlink():
                out.append(str(p.relative_to(self.root)))
        return out

    def restore(self, pristine: Path, subdir: str) -> None:
        """Put the original `subdir` (the tests) back before grading, so edits to tests do not count."""
        target = self.root / subdir
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(pristine / subdir, target)

    def run_tests(self, limits: RunLimits) -> TestOutcome:
        """Run pytest on the project under `limits` and count outcomes from its JUnit XML."""
        with tempfile.TemporaryDirectory(prefix="rigbench-junit-") as td:
            xml_path = Path(td) / "junit.xml"
            run = run_limited(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "--rootdir",
                    ".",
                    f"--junitxml={xml_path}",
                    "tests",
                ],
                self.root,
                limits,
            )
            passed, failed, ids = _junit_counts(xml_path)
        tail = run.output[-3000:]
        return TestOutcome(passed, failed, ids, tail, run)


def _junit_counts(path: Path) -> tuple[int, int, list[str]]:
    if not path.exists():
        return 0, 0, []
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return 0, 0, []
    passed = failed = 0
    ids: list[str] = []
    for case in root.iter("testcase"):
        bad = case.find("failure") is not None or case.find("error") is not None
        if case.find("skipped") is not None:
            continue
        if bad:
            failed += 1
            ids.append(f"{case.get('classname')}::{case.get('name')}")
        else:
            passed += 1
    return passed, failed, ids
