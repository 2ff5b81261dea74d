"""Run directories: durable appends, torn lines after kill -9, resume, versioning, source-data id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigbench.errors import StoreError
from rigbench.records import Fingerprint
from rigbench.store import RunHeader, RunReader, RunWriter, TrustVerdict, source_data_id

GOLDEN_V1 = Path(__file__).parent.parent / "golden" / "run_v1"


def header(run_id: str = "r1") -> RunHeader:
    return RunHeader(run_id=run_id, created_at="2026-11-29T00:00:00+00:00", rigbench_version="0.1.0",
                     plan={"suites": {"speed": {}}}, fingerprint=Fingerprint(engine="llamacpp"))


def test_records_are_readable_before_the_run_finishes(tmp_path: Path) -> None:
    w = RunWriter(tmp_path / "run", header())
    w.append({"kind": "speed_batch", "unit_id": "a"})
    w.append({"kind": "speed_batch", "unit_id": "b"})
    r = RunReader(tmp_path / "run")  # no finish(): as after kill -9
    assert [x["unit_id"] for x in r.raw_records("speed_batch")] == ["a", "b"]
    assert r.display_status == "incomplete"


def test_a_torn_last_line_is_skipped_and_dropped_on_resume(tmp_path: Path) -> None:
    w = RunWriter(tmp_path / "run", header())
    w.append({"kind": "x", "unit_id": "done"})
    with (tmp_path / "run" / "records.jsonl").open("a") as f:
        f.write('{"kind": "x", "unit_id": "half')  # the line being written when killed
    r = RunReader(tmp_path / "run")
    assert [x["unit_id"] for x in r.raw_records()] == ["done"]
    assert r.torn_lines == 1
    del w  # its process is killed: the kernel closes its files and drops its lock on the directory
    w2 = RunWriter(tmp_path / "run", r.header, resume=True)
    assert w2.took_over and "ended without closing the run" in w2.took_over
    w2.append({"kind": "x", "unit_id": "after"})
    w2.finish("complete")
    assert [x["unit_id"] for x in RunReader(tmp_path / "run").raw_records()] == ["done", "after"]


def test_finish_records_status_trust_and_a_stable_source_id(tmp_path: Path) -> None:
    w = RunWriter(tmp_path / "run", header())
    w.append({"kind": "x", "unit_id": "1", "v": 1})
    h = w.finish("complete", trust=TrustVerdict(trusted=False, reasons=["gate failed"]))
    assert h.status == "complete" and h.source_data_id and h.finished_at
    r = RunReader(tmp_path / "run")
    assert r.complete and r.header.trust and r.header.trust.reasons == ["gate failed"]
    assert r.source_data_id == source_data_id(tmp_path / "run") == h.source_data_id


def test_source_id_changes_with_the_data(tmp_path: Path) -> None:
    ids = []
    for v in (1, 2):
        w = RunWriter(tmp_path / f"run{v}", header())
        w.append({"kind": "x", "unit_id": "1", "v": v})
        ids.append(w.finish("complete").source_data_id)
    assert ids[0] != ids[1]


def test_unknown_format_version_is_refused_with_advice(tmp_path: Path) -> None:
    d = tmp_path / "run"
    RunWriter(d, header()).finish("complete")
    raw = json.loads((d / "run.json").read_text())
    raw["format_version"] = 99
    (d / "run.json").write_text(json.dumps(raw))
    with pytest.raises(StoreError, match="format version 99"):
        RunReader(d)


def test_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a rigbench run"):
        RunReader(tmp_path)


def test_refuses_to_overwrite_an_existing_run(tmp_path: Path) -> None:
    RunWriter(tmp_path / "run", header())
    with pytest.raises(StoreError, match="already exists"):
        RunWriter(tmp_path / "run", header())


def test_golden_v1_run_still_loads() -> None:
    r = RunReader(GOLDEN_V1)
    assert r.header.format_version == 1
    assert any(r.raw_records("speed_request"))
    assert r.source_data_id == r.header.source_data_id


def test_a_unit_measured_again_supersedes_its_earlier_records_which_stay_as_history(tmp_path: Path) -> None:
    from rigbench.store import RunHeader, RunReader, RunWriter

    w = RunWriter(tmp_path / "r", RunHeader(run_id="r", created_at="t", rigbench_version="0"))
    w.append({"kind": "speed_request", "unit_id": "speed/a/c1/r0/i0", "n": 1})
    w.append({"kind": "telemetry", "unit_id": "telemetry/a/c1", "n": 1})
    w.append({"kind": "speed_request", "unit_id": "speed/a/c1/r0/i0", "n": 2})  # retried
    w.append({"kind": "telemetry", "unit_id": "telemetry/a/c1", "n": 2})  # per session: both kept
    w.finish("complete")
    r = RunReader(tmp_path / "r")
    assert [x["n"] for x in r.raw_records("speed_request")] == [2]
    assert [x["n"] for x in r.raw_records("speed_request", history=True)] == [1, 2]
    assert [x["n"] for x in r.raw_records("telemetry")] == [1, 2]


def test_damaged_lines_and_records_of_the_wrong_shape_are_counted_not_raised(tmp_path: Path) -> None:
    from pydantic import BaseModel

    from rigbench.store import RunHeader, RunReader, RunWriter

    class Rec(BaseModel):
        kind: str
        unit_id: str
        n: int

    w = RunWriter(tmp_path / "r", RunHeader(run_id="r", created_at="t", rigbench_version="0"))
    w.append({"kind": "k", "unit_id": "u1", "n": 1})
    w.append({"kind": "k", "unit_id": "u2", "n": "not a number"})
    w.append({"kind": "k", "unit_id": ["not", "a", "string"], "n": 3})
    w.finish("complete")
    with (tmp_path / "r" / "records.jsonl").open("a") as f:
        f.write("[1, 2]\n{not json\n")
    r = RunReader(tmp_path / "r")
    assert [x.n for x in r.records("k", Rec)] == [1]
    assert r.damaged_records == 4  # wrong type, list unit id, a JSON list, invalid JSON
