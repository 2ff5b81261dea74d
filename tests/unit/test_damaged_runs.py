"""A finished run whose data is missing or changed is reported as damaged, never "complete, trusted"
(issue 22, item 8).

Adversary: a run directory whose records.jsonl was lost, emptied, replaced by something unreadable,
or edited after the run finished (a line added or removed: its source-data id no longer holds).
Before: `report` said "complete", the old verdict and the old source-data id. Control: the intact
copy stays complete and shows no damage.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rigbench.store import RunReader
from tests.unit.cli_inproc import invoke

GOLDEN = Path(__file__).parent.parent / "golden" / "run_v1"


def _missing(d: Path) -> None:
    (d / "records.jsonl").unlink()


def _empty(d: Path) -> None:
    (d / "records.jsonl").write_text("")


def _a_directory(d: Path) -> None:
    (d / "records.jsonl").unlink()
    (d / "records.jsonl").mkdir()


def _binary(d: Path) -> None:
    (d / "records.jsonl").write_bytes(bytes(range(256)) * 40 + b"\n")


def _line_added(d: Path) -> None:
    with (d / "records.jsonl").open("a") as f:
        f.write('{"kind": "speed_request", "unit_id": "extra/0", "result": {}}\n')


def _line_removed(d: Path) -> None:
    rec = d / "records.jsonl"
    lines = rec.read_text().splitlines(keepends=True)
    rec.write_text("".join(lines[:3] + lines[4:]))


@pytest.mark.parametrize(("damage", "said"), [
    (_missing, "records.jsonl is missing"), (_empty, "records.jsonl is empty"),
    (_a_directory, "records.jsonl cannot be read"), (_binary, "holds no readable record"),
    (_line_added, "no longer matches the source-data id"), (_line_removed, "no longer matches the source-data id"),
])
def test_a_damaged_finished_run_is_reported_as_damaged(tmp_path: Path, damage: Callable[[Path], None],
                                                       said: str) -> None:
    d = tmp_path / "runs" / "r"
    shutil.copytree(GOLDEN, d)
    assert RunReader(d).header.status == "complete" and not RunReader(d).damage  # the control, before
    damage(d)
    md = tmp_path / "r.md"
    res = invoke("report", str(d), "--markdown", str(md))
    assert res.traceback is None and res.code == 0, res.traceback or res.stderr
    out = " ".join(res.stdout.split())
    assert "verdict DAMAGED" in out and said in out and "verdict trusted" not in out, out[:1500]
    assert "DAMAGED" in md.read_text() and said in " ".join(md.read_text().split())
    res = invoke("ls", str(tmp_path / "runs"))
    assert res.code == 0 and "damaged" in res.stdout and "DAMAGED" in res.stdout, res.stdout
    res = invoke("run", "--resume", str(d))
    assert res.traceback is None and res.code == 2 and "damaged" in res.stderr, (res.code, res.stderr)


def test_an_intact_run_shows_no_damage(tmp_path: Path) -> None:
    d = tmp_path / "r"
    shutil.copytree(GOLDEN, d)
    res = invoke("report", str(d))
    assert res.code == 0 and "DAMAGED" not in res.stdout and "status complete" in " ".join(res.stdout.split())
