"""The records layer: every kind a run stores has one type in `AnyRecord`, and checked-in runs load
through it unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

import rigbench.records as records
from rigbench.errors import StoreError
from rigbench.records import RECORD_TYPES, Record, SpeedBatch, StartupTiming, record_adapter
from rigbench.store import RunReader

GOLDEN = Path(__file__).parent.parent / "golden"
CHECKED_IN_RUNS = [GOLDEN / "run_v1", GOLDEN / "emulator_a", GOLDEN / "emulator_b"]


def _all_subclasses(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _all_subclasses(sub)
    return out


def _keeps(stored: object, dumped: object) -> bool:
    """Every stored value is in the dump, in the stored key order; fields added since the run was
    written may come back too, with their defaults."""
    if isinstance(stored, dict):
        return (isinstance(dumped, dict) and all(k in dumped and _keeps(v, dumped[k]) for k, v in stored.items())
                and [k for k in dumped if k in stored] == list(stored))
    if isinstance(stored, list):
        return isinstance(dumped, list) and len(stored) == len(dumped) and all(map(_keeps, stored, dumped))
    return stored == dumped


@pytest.mark.parametrize("run", CHECKED_IN_RUNS, ids=lambda p: p.name)
def test_every_stored_line_loads_through_the_union_and_dumps_back_unchanged(run: Path) -> None:
    lines = (run / "records.jsonl").read_text().splitlines()
    assert lines
    for line in lines:
        stored = json.loads(line)
        rec = record_adapter.validate_python(stored)
        assert type(rec) is RECORD_TYPES[stored["kind"]]
        # format 3 moved an exchange's response fields into `result`: the old values read back
        # through the same names, and the rest of the record dumps back unchanged
        old_exchanges = stored.pop("exchanges", None) or ([stored.pop("exchange")] if "exchange" in stored else [])
        new_exchanges = getattr(rec, "exchanges", None) or ([rec.exchange] if hasattr(rec, "exchange") else [])
        assert len(old_exchanges) == len(new_exchanges)
        for old, ex in zip(old_exchanges, new_exchanges, strict=True):
            assert {k: getattr(ex, k) for k in old} == old, line[:200]
        dumped = json.loads(rec.model_dump_json(exclude={"exchanges", "exchange"}))
        assert _keeps(stored, dumped), line[:200]


def test_every_record_type_in_the_package_is_in_the_union() -> None:
    defined = {c for c in _all_subclasses(Record) if c.__module__.startswith("rigbench.records")}
    assert defined == set(RECORD_TYPES.values())
    assert all(getattr(records, c.__name__) is c for c in defined)


def test_records_are_frozen_and_refuse_unknown_fields() -> None:
    batch = SpeedBatch(unit_id="speed/x/c1/r0", scenario="x", concurrency=1, repetition=0, warmup=False,
                       started_ns=0, ended_ns=1, requests=1, failed=0)
    with pytest.raises(ValidationError):
        batch.requests = 2  # type: ignore[misc]
    with pytest.raises(ValidationError):
        StartupTiming(spawn_to_healthy_s=1.0, healthy_to_first_completion_s=1.0, spawn_to_first_completion_s=2.0,
                      extra_field=1)  # type: ignore[call-arg]


def test_the_reader_types_a_kind_by_the_union_and_names_the_kinds_it_knows() -> None:
    reader = RunReader(GOLDEN / "run_v1")
    batches = reader.records("speed_batch")
    assert batches and all(isinstance(b, SpeedBatch) for b in batches)
    assert [b.unit_id for b in batches] == [b.unit_id for b in reader.records("speed_batch", SpeedBatch)]
    with pytest.raises(StoreError, match="speed_request"):
        reader.records("no_such_kind")
