"""The fingerprint is typed (issue 24, item 4): `rigbench.records.Fingerprint` in run.json (run format 8),
one formatter per field (report/_fingerprint.py's registry), older formats still loading (their
keys that the model no longer declares shown, not dropped), and a run started before the change
still resuming, compared on the same recorded description as before.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from rigbench.analysis import analyze_run, fingerprint_differences
from rigbench.errors import StoreError
from rigbench.records import Fingerprint
from rigbench.report import render_html, render_markdown
from rigbench.report._fingerprint import FINGERPRINT_FIELDS, NOT_SHOWN, fingerprint_rows
from rigbench.store import FORMAT_VERSION, RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.unit.cli_inproc import invoke

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "tests" / "golden" / "run_v1"  # format 1: its fingerprint holds `engine_build`, gone since
EMU_A = ROOT / "tests" / "golden" / "emulator_a"


def _leaves(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every field, nested models' fields dotted (a field that is itself a whole row stays whole)."""
    out = set()
    for name, info in model.model_fields.items():
        dotted = prefix + name
        sub = info.annotation
        nested = [a for a in getattr(sub, "__args__", (sub,)) if isinstance(a, type) and issubclass(a, BaseModel)]
        if nested and dotted in ("host", "model"):
            out |= _leaves(nested[0], dotted + ".")
        else:
            out.add(dotted)
    return out


def test_every_field_has_a_formatter_or_a_reason_not_to_show_it() -> None:
    read = {f for row in FINGERPRINT_FIELDS for f in row.reads}
    fields = _leaves(Fingerprint)
    assert fields - read - set(NOT_SHOWN) == set(), "fields with neither a formatter nor a reason"
    assert (read | set(NOT_SHOWN)) - fields == set(), "formatters or reasons for fields the model does not have"
    assert not read & set(NOT_SHOWN)


def test_a_new_field_without_a_formatter_is_caught() -> None:
    """The adversary: a field added to the model and forgotten in the registry."""

    class Grown(Fingerprint):
        kv_offload: str | None = None

    read = {f for row in FINGERPRINT_FIELDS for f in row.reads}
    assert _leaves(Grown) - read - set(NOT_SHOWN) == {"kv_offload"}


def _v7(tmp_path: Path, fingerprint: Any) -> Path:
    """A copy of run_v1 whose header says format 7 (before the typed fingerprint) with `fingerprint`."""
    run = tmp_path / "v7"
    shutil.copytree(V1, run)
    head = json.loads((run / "run.json").read_text())
    head.update(format_version=7, fingerprint=fingerprint)
    (run / "run.json").write_text(json.dumps(head))
    return run


def test_older_formats_load_and_show_the_keys_the_model_no_longer_has(tmp_path: Path) -> None:
    fp = RunReader(V1).header.fingerprint
    assert fp is not None and fp.engine == "llamacpp" and fp.model.size_bytes == 98362432
    assert fp.older_fields == {"engine_build": "b0-unknown"}
    rows = dict(fingerprint_rows(fp))
    assert rows["older fields"] == 'engine_build = "b0-unknown" (recorded by an older rigbench)'
    # a v7 fingerprint with an older key below `host` too: kept, dotted
    raw = json.loads((V1 / "run.json").read_text())["fingerprint"]
    raw["host"]["numa_nodes"] = 2
    fp7 = RunReader(_v7(tmp_path, raw)).header.fingerprint
    assert fp7 is not None and fp7.older_fields == {"engine_build": "b0-unknown", "host.numa_nodes": 2}
    a = analyze_run(RunReader(tmp_path / "v7"))
    for text in (render_markdown(a, paths=True), render_html(["v7"], [a], paths=True)):
        assert "host.numa_nodes = 2" in text and "recorded by an older rigbench" in text


def test_a_fingerprint_never_recorded_reads_as_none_and_says_so(tmp_path: Path) -> None:
    run = _v7(tmp_path, {})  # v7 wrote {} while the rig was not yet up
    h = RunReader(run).header
    assert h.fingerprint is None
    md = render_markdown(analyze_run(RunReader(run)), paths=True)
    assert "| fingerprint | not recorded (the run stopped before its rig was up) |" in md


def test_the_current_format_refuses_an_unknown_fingerprint_key(tmp_path: Path) -> None:
    run = tmp_path / "v8"
    shutil.copytree(EMU_A, run)
    head = json.loads((run / "run.json").read_text())
    head["format_version"] = FORMAT_VERSION
    head["fingerprint"] = {**head["fingerprint"], "older_fields": None}
    (run / "run.json").write_text(json.dumps(head))
    assert RunReader(run).header.fingerprint is not None  # control: the same header, current format, loads
    head["fingerprint"]["engine_build"] = "b0"  # typed now: a key the model does not declare is an error
    (run / "run.json").write_text(json.dumps(head))
    with pytest.raises(StoreError, match="engine_build"):
        RunReader(run)


def test_differences_are_read_from_the_same_description_as_before() -> None:
    """Resume and compare read the fingerprint as run.json holds it: the typed model's dump of an
    older run is the recorded object plus only the fields it did not record (None: never a difference)."""
    raw = json.loads((V1 / "run.json").read_text())["fingerprint"]
    typed = RunReader(V1).header.fingerprint
    assert typed is not None
    _holds(typed.model_dump(mode="json"), {k: v for k, v in raw.items() if k != "engine_build"}, "")
    assert fingerprint_differences(raw, typed) == []
    other = typed.model_copy(update={"model": typed.model.model_copy(update={"sha256": "0" * 64})})
    assert [d.field for d in fingerprint_differences(raw, other)] == ["model.sha256"]


def _holds(dumped: dict[str, Any], raw: dict[str, Any], path: str) -> None:
    """`dumped` holds every recorded value as recorded; what it adds is empty (never a difference)."""
    for k, v in raw.items():
        if isinstance(v, dict) and isinstance(dumped[k], dict) and k != "server_info":
            _holds(dumped[k], v, f"{path}{k}.")
        else:
            assert dumped[k] == v, path + k
    for k in set(dumped) - set(raw):
        assert dumped[k] in (None, [], {}) or k == "older_fields", path + k


FAST = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=16)
ARGS = ["--no-sanity", "--allow-untrusted", "--scenarios", "chat_short", "--warmup", "0"]


def _as_format_7(run_dir: Path, *, keep_batches: int) -> None:
    """The run as rigbench wrote it before the typed fingerprint, killed after `keep_batches` batches:
    format 7, the fingerprint a plain object (no `older_fields`, a key since dropped)."""
    rec = run_dir / "records.jsonl"
    kept, batches = [], 0
    for line in rec.read_text().splitlines(keepends=True):
        if batches >= keep_batches and '"speed_' in line:
            continue
        kept.append(line)
        batches += '"speed_batch"' in line
    rec.write_text("".join(kept))
    head = json.loads((run_dir / "run.json").read_text())
    fp = {k: v for k, v in head["fingerprint"].items() if k != "older_fields"}
    head.update(format_version=7, status="running", finished_at=None, source_data_id=None, trust=None,
                fingerprint={**fp, "engine_build": "b0-unknown"})
    (run_dir / "run.json").write_text(json.dumps(head))


def test_a_run_started_before_the_typed_fingerprint_still_resumes(tmp_path: Path) -> None:
    with EmulatorProcess(FAST) as emu, EmulatorProcess(FAST.model_copy(update={"model": "other"})) as other:
        out = tmp_path / "runs"
        res = invoke("run", "--endpoint", emu.url, *ARGS, "--repetitions", "3", "--out", str(out))
        assert res.code == 0 and res.traceback is None, res.stderr
        (run_dir,) = out.iterdir()
        _as_format_7(run_dir, keep_batches=1)
        # the adversary: another model now behind the recorded endpoint's name is refused, as before
        moved = tmp_path / "moved"
        shutil.copytree(run_dir, moved)
        head = json.loads((moved / "run.json").read_text())
        head["plan"]["rig"]["endpoint"] = other.url
        head["plan"]["cli_options"]["endpoint"] = other.url
        head["fingerprint"]["endpoint"] = other.url
        (moved / "run.json").write_text(json.dumps(head))
        res = invoke("run", "--resume", str(moved), "--allow-untrusted")
        assert res.code == 2 and "the rig is not the one this run measured" in res.stderr, res.stdout + res.stderr
        assert "model.served_name" in res.stderr
        # the run itself resumes and finishes
        res = invoke("run", "--resume", str(run_dir), "--allow-untrusted")
        assert res.code == 0 and res.traceback is None, res.stdout + res.stderr
        reader = RunReader(run_dir)
        assert reader.header.status == "complete" and reader.header.format_version == 7
        assert sorted(r["unit_id"] for r in reader.raw_records("speed_batch")) == [
            f"speed/chat_short/c1/r{i}" for i in range(3)]
        fp = reader.header.fingerprint
        assert fp is not None and fp.model.served_name == "emulated-model"
        assert not reader.damage  # its source-data id matches what is on disk
