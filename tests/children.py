"""Processes a test starts never outlive it.

A test that starts a process and then fails, times out (pytest-timeout raises in the test) or is
interrupted must not leave it running: a child stuck where it ignores SIGTERM (a C call that holds the
interpreter lock, a run whose stop is the thing under test) ran on for hours with PPID 1 when a test
gave up on it. `spawned` starts the child in its own session and, whatever way the test leaves the
`with` block, SIGKILLs the session's whole process group (the engine, emulator or backstop the child
started too) and reaps the child. The child also gets SIGKILL if pytest itself dies before that
(Linux's parent-death signal): a CI runner's timeout that kills pytest leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["die_with_pytest", "kill_group", "spawned"]

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None  # loaded before any fork


def die_with_pytest() -> None:
    """`preexec_fn` for a child that must not outlive pytest killed outright (a busy-loop neighbour):
    SIGKILL when the thread that started it dies (Linux's parent-death signal; start it from the main thread)."""
    if _LIBC is not None:  # in the child, between fork and exec: no imports, no locks
        _LIBC.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))


def _die_with_pytest(then: Callable[[], None] | None) -> Callable[[], None]:
    def arm() -> None:
        die_with_pytest()
        if then is not None:
            then()
    return arm


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL `proc`'s process group (it leads one: `spawned` starts it so) and reap `proc`."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()


@contextlib.contextmanager
def spawned(argv: Sequence[str], *, preexec_fn: Callable[[], None] | None = None,
            **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """`subprocess.Popen(argv, **popen)` in a session of its own, killed with its group on leaving."""
    proc = subprocess.Popen(list(argv), start_new_session=True, preexec_fn=_die_with_pytest(preexec_fn), **popen)
    try:
        yield proc
    finally:
        kill_group(proc)
