"""How model-written code is confined: bubblewrap, or (only when the user allows it) nothing.

Why bubblewrap (Debian package `bubblewrap`): it is a small, audited setuid-free tool that builds a
fresh mount, PID, network, IPC and UTS namespace in one call, with a read-only root assembled from
explicit binds. Doing the same with raw `unshare` means re-implementing its mount setup (tmpfs root,
binds, `pivot_root`) in rigbench, which is where sandboxes usually get their holes.

Inside the sandbox the program sees: `/usr` (and the /bin, /lib symlinks), the Python
interpreter's prefix (and, for pytest grading, the virtual environment) read-only, a private
`/proc` and `/dev`, and the task's working copy read-write at `/sandbox`. Everything else of the
host (`/root`, `/home`, `/work`, `/tmp`, `/etc`) does not exist there. The network namespace is
empty, so even 127.0.0.1 of the host is unreachable.

Process count: RLIMIT_NPROC is counted per user namespace (Linux >= 5.14), so a fresh namespace
starts at zero and the limit bounds a fork bomb without counting the user's other processes. The
kernel never applies it to host root, so when rigbench runs as root the sandbox runs as uid 65534
(nobody): rigbench creates the user namespace itself with uid 0 and 65534 mapped (bwrap needs
root's access to bind the interpreter, which may live under /root), and the command starts with
`setpriv` dropping to 65534 with no capabilities.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

__all__ = ["SANDBOX_DIR", "Confinement", "bwrap_argv", "confinement", "user_namespace_fd"]

SANDBOX_DIR = "/sandbox"  # where the working copy appears inside the sandbox
NOBODY = 65534


class Confinement(NamedTuple):
    kind: Literal["bwrap", "unconfined"]
    note: str  # how, or why not (shown in records and reports)


def _interpreter_roots(site_packages: bool) -> list[str]:
    roots = {sys.base_prefix, str(Path(sys.executable).resolve().parent.parent)}
    if site_packages:
        roots.add(sys.prefix)
    return sorted(r for r in roots if r not in ("/usr", "/"))


def _rigbench_package_dir() -> str | None:
    """rigbench's own installed files (with the shipped packs' answers), hidden from the sandbox."""
    here = Path(__file__).resolve().parent.parent
    return str(here) if any(str(here).startswith(r + "/") for r in _interpreter_roots(True)) else None


def bwrap_argv(bwrap: str, work: Path, *, userns_fd: int | None, site_packages: bool,
               read_only: bool = False, ro_binds: Sequence[tuple[Path, str]] = ()) -> list[str]:
    """The bwrap command line that confines a program to `work` (mounted at SANDBOX_DIR).

    `read_only`: the working copy is mounted read-only except its `.tmp`; `ro_binds`: host
    directories of rigbench's own (the grading launcher) mounted read-only at the given paths.
    """
    argv = [bwrap]
    if userns_fd is None:
        argv += ["--unshare-user", "--disable-userns"]  # no nested user namespaces either
    else:
        argv += ["--userns", str(userns_fd), "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    argv += [
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session", "--clearenv",
        "--ro-bind", "/usr", "/usr",
        "--proc", "/proc", "--dev", "/dev",
    ]
    for link in ("bin", "lib", "lib64", "sbin"):
        p = Path("/" + link)
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            argv += ["--ro-bind", str(p), str(p)]
    if Path("/etc/ld.so.cache").exists():
        argv += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    made: set[str] = set()
    for root in _interpreter_roots(site_packages):
        for parent in reversed(Path(root).parents):
            if str(parent) != "/" and str(parent) not in made and not str(parent).startswith("/usr"):
                made.add(str(parent))
                argv += ["--perms", "0755", "--dir", str(parent)]
        argv += ["--ro-bind", root, root]
    hidden = _rigbench_package_dir()
    if site_packages and hidden:
        argv += ["--tmpfs", hidden]
    if read_only:
        argv += ["--ro-bind", str(work), SANDBOX_DIR, "--bind", str(work / ".tmp"), SANDBOX_DIR + "/.tmp"]
    else:
        argv += ["--bind", str(work), SANDBOX_DIR]
    for src, dest in ro_binds:
        argv += ["--ro-bind", str(src), dest]
    argv += [
        "--chdir", SANDBOX_DIR, "--remount-ro", "/",
        "--setenv", "HOME", SANDBOX_DIR, "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", SANDBOX_DIR + "/.tmp",
        "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--setenv", "PYTHONHASHSEED", "0",
        "--setenv", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1",
    ]
    return argv


def drop_to_nobody() -> list[str]:
    """The command prefix that drops root-in-namespace to uid/gid 65534 without capabilities."""
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs"]


def user_namespace_fd() -> int:
    """As root: a new user namespace with uids/gids 0 and 65534 mapped to themselves (an open fd).

    The caller passes it to bwrap (`--userns`) and closes it after the sandbox started.
    """
    helper = subprocess.Popen(["unshare", "--user", "sleep", "30"], stdin=subprocess.DEVNULL)
    try:
        mine = os.readlink("/proc/self/ns/user")
        deadline = time.monotonic() + 5
        while os.readlink(f"/proc/{helper.pid}/ns/user") == mine:
            if time.monotonic() > deadline or helper.poll() is not None:
                raise OSError("unshare --user did not create a user namespace")
            time.sleep(0.002)
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{helper.pid}/{name}", "w") as f:
                f.write(f"0 0 1\n{NOBODY} {NOBODY} 1\n")
        return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        helper.kill()
        helper.wait()


def _probe(bwrap: str | None) -> Confinement:
    if bwrap is None:
        return Confinement("unconfined", "bubblewrap (`bwrap`) is not installed")
    if os.geteuid() == 0 and (shutil.which("setpriv") is None or shutil.which("unshare") is None):
        return Confinement("unconfined", "running as root needs `setpriv` and `unshare` (util-linux)")
    fd = None
    try:
        fd = user_namespace_fd() if os.geteuid() == 0 else None
        with tempfile.TemporaryDirectory(prefix="rigbench-probe-") as work:
            argv = bwrap_argv(bwrap, Path(work), userns_fd=fd, site_packages=False)
            cmd = [*(drop_to_nobody() if fd is not None else []), os.path.realpath(sys.executable), "-I", "-S", "-c",
                   "print('ok')"]
            p = subprocess.run([*argv, *cmd], capture_output=True, timeout=30,
                               pass_fds=[fd] if fd is not None else [], stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Confinement("unconfined", f"bwrap could not be started: {e}")
    finally:
        if fd is not None:
            os.close(fd)
    if p.returncode != 0 or p.stdout.strip() != b"ok":
        err = p.stderr.decode(errors="replace").strip()[-200:]
        return Confinement("unconfined", f"bwrap is refused here (exit {p.returncode}: {err})")
    how = "as uid 65534 in its own user namespace" if os.geteuid() == 0 else "in its own user namespace"
    return Confinement("bwrap", f"bubblewrap {bwrap}: no network, host filesystem hidden, {how}")


@functools.cache
def confinement(bwrap: str | None = None) -> Confinement:
    """Whether this machine can confine model-written code (probed once per process)."""
    return _probe(bwrap or shutil.which("bwrap"))
