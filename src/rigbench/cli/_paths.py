"""Output paths checked before any measurement: a run must not end in "cannot write the report"."""

from __future__ import annotations

import os
from pathlib import Path

from rigbench.errors import UsageError

__all__ = ["check_output_dir", "check_output_file", "write_output"]


def _check_encodable(path: Path, option: str) -> None:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError as e:
        raise UsageError(f"{option} {str(path)!a}: the path is not valid UTF-8 (rigbench records paths in its "
                         "JSON files); choose a path of UTF-8 characters.") from e


def write_output(path: Path, text: str) -> None:
    """Write a report file; a failure (no such directory under /proc, a full disk) is one line naming it."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write the report file {path} ({e.strerror or e}); choose another path.") from e


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
