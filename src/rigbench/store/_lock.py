"""One writer per run directory: an advisory lock held by whoever appends to it.

Adversary: two `rigbench run --resume DIR` at once (each measured the missing units, and both sets
were appended), or a resume of a run that is still being written (its units counted twice). The
writer holds `fcntl.flock` on `RUN_DIR/.lock` from the moment it opens the directory until it closes
the run; the file names the holder (PID, host, start time; never the command, which may hold a
credential) so a refusal can say who.

The kernel drops a flock when its process dies, so a lock can never be left held by a dead
process. A lock file that still names a holder when the lock is free was left by one that died
without closing the run (kill -9, a crash): it is taken over, and the taker says so (`took_over`).
Advisory: only rigbench honours it, and on a network file system without flock it may not hold.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import socket
from pathlib import Path
from typing import IO

from rigbench.errors import StoreError

__all__ = ["LOCK_FILE", "RunLock"]

LOCK_FILE = ".lock"


class RunLock:
    """The held lock of one run directory; `release()` (or the process's end) lets it go."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILE
        try:
            self._file: IO[str] | None = self.path.open("a+", encoding="utf-8")
        except OSError as e:
            raise StoreError(f"cannot open the lock file {self.path}: {e.strerror or e}; check the permissions "
                             f"of {run_dir}.") from e
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(self._file)
            self._file.close()
            self._file = None
            raise StoreError(
                f"{run_dir} is being written by another rigbench process ({_describe(holder)}); two writers would "
                "measure the same units twice. Wait for it to finish (or stop it: `kill PID` marks its run "
                f"interrupted), then `rigbench run --resume {run_dir}`.") from None
        prior = _read(self._file)
        # the lock was free but its file names a holder: one that died without closing the run
        self.took_over = (f"took over the lock of {run_dir} from {_describe(prior)}, which ended without "
                          "closing the run") if prior else None
        self._write({"pid": os.getpid(), "host": socket.gethostname(),
                     "started_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")})

    def release(self) -> None:
        """Closed cleanly: the file is emptied (no holder to report) and the lock dropped."""
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            self._file.truncate(0)
            self._file.flush()
        self._file.close()  # closing the last descriptor drops the flock
        self._file = None

    def _write(self, holder: dict[str, object]) -> None:
        assert self._file is not None
        with contextlib.suppress(OSError):  # the holder's name is a courtesy; the flock is the lock
            self._file.seek(0)
            self._file.truncate(0)
            self._file.write(json.dumps(holder))
            self._file.flush()


def _read(f: IO[str]) -> dict[str, object] | None:
    try:
        f.seek(0)
        text = f.read(4096)
    except (OSError, UnicodeDecodeError):
        return None
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return {"damaged": True}
    return obj if isinstance(obj, dict) else {"damaged": True}


def _describe(holder: dict[str, object] | None) -> str:
    if not holder or holder.get("damaged"):
        return "a process whose lock record is unreadable"
    where = f" on {holder['host']}" if holder.get("host") and holder.get("host") != socket.gethostname() else ""
    return f"PID {holder.get('pid', '?')}{where}, started {holder.get('started_at', '?')}"
