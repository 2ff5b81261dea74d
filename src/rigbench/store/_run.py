"""Writing and reading run directories."""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ValidationError

from rigbench.errors import StoreError, StoreWriteError
from rigbench.records import RECORD_TYPES, Record
from rigbench.store._format import HEADER_FILE, LOG_FILE, RECORDS_FILE, SUPPORTED_VERSIONS
from rigbench.store._header import RunHeader, RunStatus, TrustVerdict
from rigbench.store._lock import RunLock

__all__ = [
    "SESSION_KINDS",
    "RunReader",
    "RunWriter",
    "new_run_id",
    "now_utc",
    "source_data_id",
]

# Evidence recorded once per session of a run (each resume adds its own): never superseded.
SESSION_KINDS = frozenset({"selfcheck", "telemetry"})

M = TypeVar("M", bound=BaseModel)


def now_utc() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def new_run_id(label: str = "run") -> str:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in label)[:40]
    return f"{stamp}-{safe}-{secrets.token_hex(2)}"


def source_data_id(run_dir: Path) -> str:
    """Content hash of a run's data: the records file, plus the plan and fingerprint it ran with.

    Timestamps of the header itself (created/finished, status) are left out so re-rendering or
    re-marking a run never changes its id.
    """
    h = hashlib.sha256()
    header = json.loads((run_dir / HEADER_FILE).read_text())
    h.update(json.dumps({"plan": header.get("plan"), "fingerprint": header.get("fingerprint")},
                        sort_keys=True).encode())
    rec = run_dir / RECORDS_FILE
    if rec.is_file():
        whole = _whole_lines(rec)  # a torn last line is not part of the data
        with rec.open("rb") as f:
            while whole > 0:
                block = f.read(min(whole, 1 << 20))
                if not block:
                    break
                h.update(block)
                whole -= len(block)
    return h.hexdigest()[:16]


# A run directory may come from anyone (`rigbench report DIR`): its files are read within bounds. A header
# holds the plan and fingerprint (kilobytes); a record line one request's stamps and text, or one agent
# trial (megabytes at most). A line past the bound is counted damaged, never held.
_HEADER_MAX_BYTES = 64 << 20
_LINE_MAX_BYTES = 256 << 20


def _whole_lines(path: Path) -> int:
    """The length of `path` up to and including its last newline (read backwards, a block at a time)."""
    with path.open("rb") as f:
        end = f.seek(0, os.SEEK_END)
        pos = end
        while pos > 0:
            step = min(pos, 1 << 16)
            f.seek(pos - step)
            block = f.read(step)
            at = block.rfind(b"\n")
            if at >= 0:
                return pos - step + at + 1
            pos -= step
    return 0


def _bounded_lines(f: Any) -> Iterator[bytes | None]:
    """The lines of a binary file, each at most _LINE_MAX_BYTES; None for a longer one (skipped, not held)."""
    while True:
        line = f.readline(_LINE_MAX_BYTES + 1)
        if not line:
            return
        if len(line) > _LINE_MAX_BYTES and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = f.readline(1 << 20)
            yield None
            continue
        yield line


class RunWriter:
    """Creates a run directory and appends records, one flushed line each."""

    def __init__(self, run_dir: Path, header: RunHeader, *, resume: bool = False, lock: RunLock | None = None) -> None:
        """`lock`: the directory's lock when the caller took it first (a resume, before reading what is
        done); else the writer takes it (StoreError when another process holds it)."""
        self.dir = run_dir
        if resume:
            if not (run_dir / HEADER_FILE).exists():
                raise StoreError(f"cannot resume {run_dir}: no {HEADER_FILE} there. Pass a run directory.")
        else:
            if run_dir.exists() and any(run_dir.iterdir()):
                raise StoreError(f"run directory {run_dir} already exists and is not empty; choose another --out.")
            try:
                run_dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"cannot create the run directory {run_dir}: {e.strerror or e}; choose another "
                                 "--out.") from e
        self._lock = lock or RunLock(run_dir)
        self.took_over = self._lock.took_over  # a note for the user: the last writer died mid-run
        self._header = header
        try:
            self._write_header()
        except OSError as e:
            raise StoreError(f"cannot write {run_dir / HEADER_FILE}: {e.strerror or e}; choose another --out.") from e
        if resume:
            _drop_torn_tail(run_dir / RECORDS_FILE)
        # unbuffered: a line is written by one call or not at all, and a failed write leaves nothing
        # queued in a buffer to fail again (or land torn) at close
        self._records = (run_dir / RECORDS_FILE).open("ab", buffering=0)

    @property
    def header(self) -> RunHeader:
        return self._header

    @property
    def log_path(self) -> Path:
        return self.dir / LOG_FILE

    def blob(self, name: str, data: bytes | str) -> str:
        """Store a piece of evidence; returns its path relative to the run dir."""
        raw = data.encode() if isinstance(data, str) else data
        digest = hashlib.sha256(raw).hexdigest()[:16]
        rel = f"blobs/{digest}-{name}"
        path = self.dir / rel
        path.parent.mkdir(exist_ok=True)
        if not path.exists():
            path.write_bytes(raw)
        return rel

    def append(self, record: BaseModel | dict[str, Any]) -> None:
        line = record.model_dump_json() if isinstance(record, BaseModel) else json.dumps(record)
        data = memoryview((line + "\n").encode())
        try:
            while data:
                n = self._records.write(data)
                data = data[n or 0:]
        except OSError as e:
            raise _write_error(self.dir / RECORDS_FILE, e) from e

    def update(self, **changes: Any) -> None:
        self._header = self._header.model_copy(update=changes)
        self._write_header()

    def finish(self, status: RunStatus, *, trust: TrustVerdict | None = None, error: str | None = None) -> RunHeader:
        # every line was written by its own call; if syncing fails, the header below says how the run ended
        with contextlib.suppress(OSError):
            os.fsync(self._records.fileno())
        self._records.close()
        self._header = self._header.model_copy(
            update={"status": status, "finished_at": now_utc(), "trust": trust or self._header.trust,
                    "error": error}
        )
        self._write_header()
        self._header = self._header.model_copy(update={"source_data_id": source_data_id(self.dir)})
        self._write_header()
        self._lock.release()
        return self._header

    def _write_header(self) -> None:
        text = self._header.model_dump_json(indent=2).encode()
        tmp = self.dir / (HEADER_FILE + ".tmp")
        try:
            tmp.write_bytes(text)
            os.replace(tmp, self.dir / HEADER_FILE)
            return
        except OSError as e:
            first = e
            with contextlib.suppress(OSError):
                tmp.unlink()
        # A full disk has no room for a second copy: rewrite the header in place, in the blocks it
        # already holds (not atomic, so only when the atomic way failed).
        try:
            with (self.dir / HEADER_FILE).open("r+b") as f:
                f.write(text)
                f.truncate()
        except OSError as e:
            raise _write_error(self.dir / HEADER_FILE, first) from e


def _write_error(path: Path, e: OSError) -> StoreWriteError:
    try:
        free = f"{shutil.disk_usage(path.parent).free:,} bytes free there"
    except OSError:
        free = "free space unknown"
    return StoreWriteError(
        f"cannot write {path}: {e.strerror or e} ({free}). The run stops here, marked interrupted if its header can "
        f"still be written; every record already written is kept. Free space (or fix the device), then `rigbench run "
        f"--resume {path.parent}` measures the rest.")


def _drop_torn_tail(path: Path) -> None:
    if not path.is_file():
        return
    cut = _whole_lines(path)  # never the whole file in memory: a long run's records are gigabytes
    if cut != path.stat().st_size:
        with path.open("r+b") as f:
            f.truncate(cut)


class RunReader:
    """Reads a run directory written by any supported format version."""

    def __init__(self, run_dir: Path | str) -> None:
        self.dir = Path(run_dir)
        hp = self.dir / HEADER_FILE
        if not hp.exists():
            raise StoreError(f"{self.dir} is not a rigbench run: no {HEADER_FILE}. "
                             "Pass a directory made by `rigbench run` (see `rigbench ls`).")
        try:
            if not hp.is_file() or hp.stat().st_size > _HEADER_MAX_BYTES:
                raise StoreError(f"{hp} is not a run header (not a file, or more than {_HEADER_MAX_BYTES:,} bytes); "
                                 "the run header is damaged.")
            with hp.open("rb") as f:
                raw = json.loads(f.read(_HEADER_MAX_BYTES + 1))
        except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, nested past the stack
            raise StoreError(f"{hp} is not valid JSON ({type(e).__name__}: {str(e)[:200]}); the run header is "
                             "damaged.") from None
        except OSError as e:
            raise StoreError(f"cannot read {hp}: {e.strerror or e}.") from e
        if not isinstance(raw, dict):
            raise StoreError(f"{hp} holds a JSON {type(raw).__name__}, not a run header object; the run header is "
                             "damaged.")
        version = raw.get("format_version")
        if version not in SUPPORTED_VERSIONS:
            raise StoreError(f"{self.dir} has run format version {version!r}; this rigbench reads "
                             f"{sorted(SUPPORTED_VERSIONS)}. Upgrade rigbench.")
        try:
            self.header = RunHeader.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"]) or "the header"
            raise StoreError(f"{hp} does not match the run format: {where}: {err['msg']} ({e.error_count()} "
                             "problem(s)); the run header is damaged.") from None
        self.torn_lines = 0  # damaged lines seen so far (kept for callers of the old name)
        self._damaged: set[int] = set()
        self._unreadable: str | None = None  # why records.jsonl could not be read at all
        self._damage: list[str] | None = None

    @property
    def complete(self) -> bool:
        return self.header.status == "complete"

    @property
    def display_status(self) -> str:
        """`running` on disk for a run nobody is writing means it was killed: say incomplete; a complete
        run whose data is missing or changed since it finished is `damaged` (`damage` says how)."""
        if self.header.status in ("running", "interrupted"):
            return "incomplete"
        return "damaged" if self.damage else self.header.status

    @property
    def damage(self) -> list[str]:
        """What is wrong with a finished run's data, for a reader who would otherwise trust it: records
        missing, empty or unreadable, or records that no longer hash to the source-data id recorded
        when the run finished (changed, added or removed since). Empty for a sound run and for an
        unfinished one (its records are expected to be partial)."""
        if self._damage is None:
            self._damage = self._find_damage() if self.header.status not in ("running", "interrupted") else []
        return self._damage

    def _find_damage(self) -> list[str]:
        path = self.dir / RECORDS_FILE
        if not path.exists():
            return [f"{RECORDS_FILE} is missing: the run has no measurements"]
        if not path.is_file():  # a directory, a FIFO (whose opening would wait for a writer), a device
            return [f"{RECORDS_FILE} cannot be read (not a regular file)"]
        try:
            size = path.stat().st_size
            with path.open("rb") as f:
                f.read(1)
        except OSError as e:
            return [f"{RECORDS_FILE} cannot be read ({e.strerror or e})"]
        if size == 0:
            return [f"{RECORDS_FILE} is empty: the run has no measurements"]
        found: list[str] = []
        lines = sum(1 for _ in self._scan(None, True))
        if self._unreadable is not None:
            return [f"{RECORDS_FILE} cannot be read ({self._unreadable})"]
        if lines == 0:
            found.append(f"{RECORDS_FILE} holds no readable record ({self.damaged_records} damaged lines)")
        recorded = self.header.source_data_id
        if recorded is not None:
            now = source_data_id(self.dir)
            if now != recorded:
                found.append(f"its data no longer matches the source-data id {recorded} recorded when it finished "
                             f"(now {now}): records (or the plan or fingerprint in run.json) were changed, added or "
                             "removed since")
        return found

    @property
    def source_data_id(self) -> str:
        return self.header.source_data_id or source_data_id(self.dir)

    @property
    def damaged_records(self) -> int:
        """Lines skipped so far because they were torn, not JSON, or not of their kind's shape."""
        return len(self._damaged)

    def raw_records(self, kind: str | None = None, *, history: bool = False) -> Iterator[dict[str, Any]]:
        for _, obj in self._scan(kind, history):
            yield obj

    def _scan(self, kind: str | None, history: bool) -> Iterator[tuple[int, dict[str, Any]]]:
        """Records in file order. A unit measured again (a retried failure, or a unit redone after a
        crash between its records) is represented by its latest record; earlier ones are history,
        returned only with `history=True`, so nothing is counted twice."""
        path = self.dir / RECORDS_FILE
        if not path.exists():
            return
        objs: list[tuple[int, dict[str, Any]]] = []  # only the asked kind: memory as before superseding
        latest: dict[tuple[Any, Any], int] = {}
        if not path.is_file():
            self._unreadable = "not a regular file"
            return
        try:
            f = path.open("rb")
        except OSError as e:  # e.g. a directory in its place: no records, and `damage` says why
            self._unreadable = e.strerror or str(e)
            return
        with f:
            for n, line in enumerate(_bounded_lines(f), 1):
                if line is None or not line.endswith(b"\n"):
                    self._damaged.add(n)  # past the bound; or the line being written when the run was killed
                    continue
                try:
                    obj = json.loads(line)
                except (ValueError, RecursionError):
                    self._damaged.add(n)
                    continue
                if not isinstance(obj, dict):
                    self._damaged.add(n)
                    continue
                k = obj.get("kind")
                if not history and k not in SESSION_KINDS and isinstance(obj.get("unit_id"), str):
                    latest[(k, obj["unit_id"])] = n
                if kind is None or k == kind:
                    objs.append((n, obj))
        self.torn_lines = len(self._damaged)
        for n, obj in objs:
            uid = obj.get("unit_id")
            if not history and isinstance(uid, str) and latest.get((obj.get("kind"), uid), n) != n:
                continue  # superseded by a later record of the same unit
            yield n, obj

    @overload
    def records(self, kind: str) -> list[Record]: ...

    @overload
    def records(self, kind: str, model: type[M]) -> list[M]: ...

    def records(self, kind: str, model: type[BaseModel] | None = None) -> list[Any]:
        """Records of one kind as `model` (by default the kind's type in `rigbench.records.AnyRecord`);
        a line that does not fit the model is counted as damaged."""
        if model is None:
            if kind not in RECORD_TYPES:
                raise StoreError(f"no record type for kind {kind!r}; the kinds a run holds are "
                                 f"{', '.join(sorted(RECORD_TYPES))}. Pass the model, or read raw_records.")
            model = RECORD_TYPES[kind]
        out: list[Any] = []
        for line, r in self._scan(kind, False):
            try:
                out.append(model.model_validate(r))
            except ValidationError:
                self._damaged.add(line)
        self.torn_lines = len(self._damaged)
        return out
