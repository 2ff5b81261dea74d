"""Opening a run: a new run directory, or the run being resumed, and the checks that keep a resume the same
run (same settings, same rig) and say which units are done."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from rigbench._version import __version__
from rigbench.analysis import fingerprint_differences
from rigbench.errors import (
    UsageError,
)
from rigbench.records import (
    Fingerprint,
    SpeedBatch,
    SpeedRequest,
)
from rigbench.runner._config import RunConfig
from rigbench.runner._watch import _TRANSPORT_KINDS
from rigbench.store import RunHeader, RunLock, RunReader, RunWriter, new_run_id, now_utc
from rigbench.suites import Progress


class _Opened(NamedTuple):
    writer: RunWriter
    done: set[str]  # units measured already (a resume)
    prior: tuple[str, str | None]  # the run's status and error before this session (left as they were on _WrongRig)
    run_dir: Path


def _open_run(cfg: RunConfig, plan: dict[str, Any], prog: Progress) -> _Opened | RunHeader:
    """The run's writer: a new run directory, or the run being resumed (its lock taken, what is done
    read); the run's header when a resume has nothing to measure (finished, nothing to redo)."""
    if cfg.resume is None:
        run_id = cfg.run_id or new_run_id(cfg.label)
        header = RunHeader(run_id=run_id, created_at=now_utc(), rigbench_version=__version__, command=cfg.command,
                           plan=plan)
        return _Opened(RunWriter(cfg.out_dir / run_id, header), set(), ("failed", None), cfg.out_dir / run_id)
    reader = RunReader(cfg.resume)
    if reader.damage:
        raise UsageError(f"cannot resume {cfg.resume}: it is damaged: {'; '.join(reader.damage)}. Measure the "
                         "rig again in a new run.")
    _refuse_changed_plan(cfg.resume, reader.header.plan, plan)  # a finished run too: same refusal
    if reader.header.status == "complete" and not cfg.retry_failed:
        return reader.header
    lock = RunLock(cfg.resume)  # before reading what is done: no other process appends from here on
    try:
        reader = RunReader(cfg.resume)
        done = _done_units(reader, retry_failed=cfg.retry_failed)
        if cfg.retry_failed:
            failed = _failed_units(reader)
            prog.note(f"--retry-failed: redoing {len(failed)} unit(s) with a failed request"
                      + (f" ({', '.join(sorted(failed)[:5])}{', ...' if len(failed) > 5 else ''})" if failed
                         else ": none failed"))
        if reader.header.status == "complete" and not (cfg.retry_failed and _failed_units(reader)):
            lock.release()  # finished (perhaps by the writer we waited for), nothing to redo: untouched
            return reader.header
        prior = (reader.header.status, reader.header.error)
        header = reader.header.model_copy(update={"status": "running", "finished_at": None, "error": None,
                                                  "source_data_id": None})
        writer = RunWriter(cfg.resume, header, resume=True, lock=lock)
    except BaseException:
        lock.release()
        raise
    if writer.took_over:
        prog.note(writer.took_over)
    return _Opened(writer, done, prior, cfg.resume)


# Where `rigbench run` wrote per-request files: output, not a setting. Runs recorded them in
# `plan.cli_options` until they were known as such; they are not compared, so those runs resume with any path.
OUTPUT_OPTIONS = ("csv", "jsonl")


def _refuse_changed_plan(run_dir: Path, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Resume only the run that was started: a changed rig, endpoint, model, suite or setting is refused."""
    if isinstance(old.get("cli_options"), dict):
        old = {**old, "cli_options": {k: v for k, v in old["cli_options"].items() if k not in OUTPUT_OPTIONS}}
    diff = _first_difference(old, new, "")
    if diff is None:
        return
    where, was, now = diff
    raise UsageError(
        f"cannot resume {run_dir}: this command changes {where} from {_show(was)} to {_show(now)}. A resumed "
        f"run must measure the same rig with the same settings: run `rigbench run --resume {run_dir}` with no "
        "other settings (they are read from its run.json), or start a new run.")


class _WrongRig(UsageError):
    """Resume found another rig: the run is left as it was (status and error)."""


def _refuse_changed_rig(run_dir: Path, old: Fingerprint | None, new: Fingerprint) -> None:
    """The server answering now must be the one measured before (adversary: another model or engine
    behind the same URL and model name, whose numbers would be merged into this run)."""

    if old is None:
        return  # the earlier session stopped before fingerprinting
    diffs = [d for d in fingerprint_differences(old, new) if d.matters]
    if diffs:
        d = diffs[0]
        raise _WrongRig(
            f"cannot resume {run_dir}: the rig is not the one this run measured: its {d.field} was "
            f"{_show(d.baseline)} and is now {_show(d.other)}. Measure this rig in a new run.")


def _show(v: Any) -> str:
    text = json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:157] + "..."


def _first_difference(old: Any, new: Any, path: str) -> tuple[str, Any, Any] | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            if key not in old:
                continue  # recorded by a newer rigbench than the one that started the run
            sub = f"{path}.{key}" if path else str(key)
            if key not in new:
                return sub, old[key], None
            d = _first_difference(old[key], new[key], sub)
            if d is not None:
                return d
        return None
    return None if old == new else (path, old, new)


def _failed_units(reader: RunReader) -> set[str]:
    """Units whose latest record holds a failed request (any reason), as `--retry-failed` redoes them."""
    failed: set[str] = set()
    for r in reader.raw_records():
        uid, res = r.get("unit_id"), r.get("result")
        if isinstance(uid, str) and isinstance(res, dict) and res.get("error"):
            failed.add(uid.rsplit("/", 1)[0] if r.get("kind") == "speed_request" else uid)
    return failed


def _done_units(reader: RunReader, *, retry_failed: bool = False) -> set[str]:
    """Units that need no measuring again.

    Not done: a speed batch with a failed request or with a request record missing or damaged
    (a crash between a request and its batch record), and any unit whose record failed for a
    transport reason (connect, disconnect, deadline); with `retry_failed`, any unit whose record
    failed for any reason. Their records stay in the file as history.
    """

    if retry_failed:
        return _done_units(reader) - _failed_units(reader)
    done: set[str] = set()
    for r in reader.raw_records():
        uid = r.get("unit_id")
        if not isinstance(uid, str) or r.get("kind") in ("speed_batch", "speed_request"):
            continue
        res = r.get("result")
        err = res.get("error") if isinstance(res, dict) else None
        if isinstance(err, dict) and err.get("kind") in _TRANSPORT_KINDS:
            continue
        done.add(uid)
    per_batch: dict[str, int] = {}
    for q in reader.records("speed_request", SpeedRequest):
        if q.result.ok:
            key = q.unit_id.rsplit("/", 1)[0]
            per_batch[key] = per_batch.get(key, 0) + 1
    for b in reader.records("speed_batch", SpeedBatch):
        if b.failed == 0 and per_batch.get(b.unit_id, 0) >= b.requests:
            done.add(b.unit_id)
    return done
