"""A run directory streamed from the node that writes it to the driver that keeps it.

The node's tailer polls the directory and emits deltas; the driver applies them to its copy. Only
complete lines of `records.jsonl` travel (a torn line is never half-copied), so the driver's copy is
always a run directory that `RunReader` and `--resume` accept. Files rewritten whole (the header,
`run.json`) travel whole when they change; every other file (the engine log, blobs) by appended bytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, NamedTuple

from rigbench.store import HEADER_FILE, RECORDS_FILE

__all__ = ["Delta", "DirTailer", "apply_delta", "snapshot_dir"]

_WHOLE = {HEADER_FILE}


class Delta(NamedTuple):
    op: Literal["append", "replace"]
    path: str  # relative to the run directory
    offset: int  # append: where `data` starts in the file
    data: bytes


def snapshot_dir(run_dir: Path) -> dict[str, bytes]:
    """Every file of a run directory (complete record lines only), to ship to the node that resumes it."""
    out: dict[str, bytes] = {}
    for p in sorted(run_dir.rglob("*")):
        if not p.is_file() or p.name.endswith(".tmp"):
            continue
        rel = p.relative_to(run_dir).as_posix()
        data = p.read_bytes()
        if rel == RECORDS_FILE:
            data = data[: data.rfind(b"\n") + 1]
        out[rel] = data
    return out


class DirTailer:
    """Polls a run directory; `poll()` returns what changed since the last poll."""

    def __init__(self, run_dir: Path, already: dict[str, bytes] | None = None) -> None:
        self.dir = run_dir
        # bytes the driver already has (a resumed run): never sent again
        self._offsets: dict[str, int] = {k: len(v) for k, v in (already or {}).items() if k not in _WHOLE}
        self._whole: dict[str, bytes] = {k: v for k, v in (already or {}).items() if k in _WHOLE}

    def poll(self) -> list[Delta]:
        out: list[Delta] = []
        if not self.dir.exists():
            return out
        for p in sorted(self.dir.rglob("*")):
            if not p.is_file() or p.name.endswith(".tmp"):
                continue
            rel = p.relative_to(self.dir).as_posix()
            try:
                if rel in _WHOLE:
                    data = p.read_bytes()
                    if data and self._whole.get(rel) != data:
                        self._whole[rel] = data
                        out.append(Delta("replace", rel, 0, data))
                    continue
                off = self._offsets.get(rel, 0)
                if os.path.getsize(p) < off:  # rewritten from the start (a log reopened with "w")
                    off = 0
                with p.open("rb") as f:
                    f.seek(off)
                    data = f.read()
            except FileNotFoundError:  # replaced between listing and reading
                continue
            if rel == RECORDS_FILE:
                data = data[: data.rfind(b"\n") + 1]
            if data:
                out.append(Delta("append", rel, off, data))
                self._offsets[rel] = off + len(data)
        return out


def apply_delta(run_dir: Path, d: Delta) -> None:
    """Write one delta into the driver's copy (records flushed and synced: a driver crash keeps them)."""
    path = run_dir / d.path
    if not path.resolve().is_relative_to(run_dir.resolve()):
        raise ValueError(f"refusing to write outside the run directory: {d.path!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if d.op == "replace":
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(d.data)
        os.replace(tmp, path)
        return
    with path.open("r+b" if path.exists() else "wb") as f:
        f.truncate(d.offset)
        f.seek(d.offset)
        f.write(d.data)
        f.flush()
        if d.path == RECORDS_FILE:
            os.fsync(f.fileno())
