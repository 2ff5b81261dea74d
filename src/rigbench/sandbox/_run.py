"""Run one command on a working copy, confined and limited; the one way rigbench runs model code."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from rigbench.errors import UsageError
from rigbench.sandbox._confine import Confinement, bwrap_argv, confinement, drop_to_nobody, user_namespace_fd

__all__ = ["Limits", "RunOutcome", "SandboxUnavailable", "require_confinement", "run_confined", "sandbox_python"]


class SandboxUnavailable(UsageError):
    """This machine cannot confine model-written code and the user did not allow running it unconfined."""


class Limits(NamedTuple):
    cpu_s: int = 30
    memory_bytes: int = 1024 * 1024 * 1024  # address space per process
    wall_s: float = 60.0
    file_bytes: int = 1024 * 1024  # largest file the program may write (its captured output too)
    processes: int = 64  # processes and threads at once, the sandbox's own count


class RunOutcome(NamedTuple):
    returncode: int | None  # None when killed for the wall-time limit
    output: str  # stdout+stderr, the last `file_bytes` at most
    timed_out: bool
    confinement: Confinement
    channel: str  # what the harness wrote on its result channel ("" when none was asked for)


def require_confinement(allow_unconfined: bool) -> Confinement:
    """The confinement runs will get; SandboxUnavailable when there is none and none was allowed."""
    c = confinement()
    if c.kind == "unconfined" and not allow_unconfined:
        raise SandboxUnavailable(
            f"model-written code cannot be confined on this machine: {c.note}. Install bubblewrap "
            "(Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`), or pass "
            "--allow-unconfined to run it with resource limits only (every such result is then marked "
            "'unconfined'); only do that on a machine the model's code may read and write."
        )
    return c


def sandbox_python(site_packages: bool) -> str:
    """The interpreter path to use inside the sandbox: the virtualenv's only when its packages are needed."""
    return sys.executable if site_packages else os.path.realpath(sys.executable)


def own_dir(path: Path) -> None:
    """Make `path` a real directory again. Code that ran in the work dir before may have left a
    symlink there, and rigbench (possibly root) must never write or read through it."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    path.mkdir(exist_ok=True)


def own_file(path: Path, text: str) -> None:
    """Write rigbench's own file in the work dir, replacing (not following) whatever is there."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
    path.write_text(text)


def _user_tasks(uid: int) -> int:
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    n += len(os.listdir(f"/proc/{pid}/task"))
    return n


def _limit(limits: Limits, nproc: int | None) -> None:  # in the child between fork and exec
    os.setsid()
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if nproc is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(dirpath, name), uid, uid)


def run_confined(argv: list[str], work: Path, limits: Limits, *, allow_unconfined: bool,
                 site_packages: bool = False, channel: bool = False, extra_fds: Sequence[int] = (),
                 read_only: bool = False, ro_binds: Sequence[tuple[Path, str]] = ()) -> RunOutcome:
    """Run `argv` with `work` as its only writable (and only visible non-system) directory.

    `argv[0]` should come from `sandbox_python()`. With `channel`, the command gets `--channel FD`
    appended: a file outside `work` that only the harness is meant to write, read back afterwards.
    `extra_fds` are passed through open; `read_only` and `ro_binds` as for `bwrap_argv` (confined only).
    """
    conf = require_confinement(allow_unconfined)
    own_dir(work / ".tmp")
    pass_fds: list[int] = list(extra_fds)
    userns: int | None = None
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(tempfile.TemporaryFile())
        chan = stack.enter_context(tempfile.TemporaryFile()) if channel else None
        cmd = list(argv)
        if chan is not None:
            cmd += ["--channel", str(chan.fileno())]
            pass_fds.append(chan.fileno())
        if conf.kind == "bwrap":
            bwrap = shutil.which("bwrap") or "bwrap"
            inner = ["prlimit", f"--nproc={limits.processes}:{limits.processes}", "--"]
            if os.geteuid() == 0:
                userns = user_namespace_fd()
                stack.callback(os.close, userns)
                pass_fds.append(userns)
                inner += drop_to_nobody()
                _chown_tree(work, 65534)
            full = [*bwrap_argv(bwrap, work, userns_fd=userns, site_packages=site_packages, read_only=read_only,
                                ro_binds=ro_binds), *inner, *cmd]
            cwd, env, nproc = None, {}, None
        else:
            full = cmd
            cwd = work
            env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "LANG": "C.UTF-8", "TMPDIR": str(work / ".tmp"),
                   "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
            # Host root ignores RLIMIT_NPROC; for anyone else it counts all their tasks.
            nproc = None if os.geteuid() == 0 else _user_tasks(os.getuid()) + limits.processes
        proc = subprocess.Popen(full, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, pass_fds=pass_fds,
                                preexec_fn=lambda: _limit(limits, nproc))
        timed_out = False
        try:
            code: int | None = proc.wait(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
        size = out.seek(0, os.SEEK_END)
        out.seek(max(0, size - limits.file_bytes))
        text = out.read().decode(errors="replace")
        got = ""
        if chan is not None:
            chan.seek(0)
            got = chan.read(limits.file_bytes).decode(errors="replace")
    return RunOutcome(code, text, timed_out, conf, got)
