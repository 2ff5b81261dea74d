"""Output paths checked before any measurement: a run must not end in "cannot write the report".

What a check cannot foresee (a full disk, a device that refuses the bytes: `/dev/full`) fails at the
write: `write_output` raises `OutputError` naming the option, the path and the error, and removes the
part of a regular file it had written, so a truncated export is never taken for a whole one.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from rigbench.errors import UsageError

__all__ = ["OutputError", "check_output_dir", "check_output_file", "write_output"]


class OutputError(UsageError):
    """An output file that could not be written (what was measured is kept)."""

    def __init__(self, option: str, path: Path, reason: str) -> None:
        super().__init__(f"cannot write {option} {path} ({reason}); choose another path.")
        self.option, self.path, self.reason = option, path, reason


def _check_encodable(path: Path, option: str) -> None:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError as e:
        raise UsageError(f"{option} {str(path)!a}: the path is not valid UTF-8 (rigbench records paths in its "
                         "JSON files); choose a path of UTF-8 characters.") from e


def write_output(path: Path, text: str | Iterable[str], option: str = "the report file") -> None:
    """Write an output file: a whole text, or its pieces in turn (an export of many rows, never held whole).
    A failure raises OutputError; what was written of a regular file is removed."""
    try:
        regular = not path.exists() or stat.S_ISREG(path.stat().st_mode)
    except OSError:
        regular = False
    try:
        with path.open("w", encoding="utf-8", newline="") as f:
            for piece in [text] if isinstance(text, str) else text:
                f.write(piece)
    except (OSError, UnicodeEncodeError) as e:
        if regular:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise OutputError(option, path, reason) from e


def check_output_file(path: Path | None, option: str) -> None:
    """`path` can be created or overwritten as a file; else a UsageError naming the option and the fix."""
    if path is None:
        return
    _check_encodable(path, option)
    if path.is_dir():
        raise UsageError(f"{option} {path}: that is a directory; give a file name, e.g. {path / 'report.out'}.")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: the directory {parent} does not exist; create it or choose another path.")
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{option} {path}: the file exists and is not writable; choose another path.")
    if path.resolve().parts[1:2] in (("proc",), ("sys",)):
        raise UsageError(f"{option} {path}: that is a kernel interface, not a file to write to; choose another path.")
    if path.exists():
        try:  # what os.access cannot tell (a /proc file, a read-only mount, root's view of modes): open it,
            # appending nothing, so the file is left as it was; not blocking (a FIFO nobody reads is refused)
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
        except OSError as e:
            raise UsageError(f"{option} {path}: the file cannot be written ({e.strerror or e}); choose another "
                             "path.") from None
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot create files in {parent} (permission denied); "
                         "choose another path.")


def check_output_dir(path: Path, option: str) -> None:
    """`path` is (or can be made) a writable directory."""
    _check_encodable(path, option)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path}: that is a file, not a directory; choose a directory.")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"{option} {path}: {probe} is a file, so the directory cannot be created.")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot write in {probe} (permission denied); choose another directory.")
