"""Exports are safe to open, and one that cannot be written loses nothing (issue 34, item 4).

Adversary: a server whose `finish_reason` and in-stream error messages are spreadsheet formulas
(`=HYPERLINK(...)`, `@SUM(...)`, `+`, `-`, a leading tab) carrying raw escape bytes, and a user whose
export path cannot be written (`/dev/full`, a `/proc` file). Every export of the run (CSV, JSON lines,
vLLM JSON, JSON, Markdown, HTML) is read back: no text cell a spreadsheet would evaluate, no raw
control character. Healthy control: numbers, negative ones included, stay numbers; ordinary text is
unchanged.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rigbench.outside import for_csv
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault
from tests.unit.cli_inproc import invoke
from tests.unit.fuzz_support import FORMULA_START, RAW_CONTROL, is_number

FORMULA = '=HYPERLINK("http://x","y")\x1b[2J'
SERVER = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=8, finish_reason=FORMULA,
                        faults=[Fault(kind="error_event", message="@SUM(1+1)\x1b]0;pwned\x07", every=3, at_token=2),
                                Fault(kind="error_event", message="+cmd|' /C calc'!A0", every=5, offset=1,
                                      at_token=1)])
ARGS = ["--no-sanity", "--allow-untrusted"]


def _only_run(out: Path) -> Path:
    (d,) = [p for p in out.iterdir() if p.is_dir()]
    return d


def test_every_export_of_a_hostile_server_opens_safely(tmp_path: Path) -> None:
    files = {ext: tmp_path / f"out.{ext}" for ext in ("csv", "jsonl", "json", "md", "html")}
    vllm = tmp_path / "vllm.json"
    with EmulatorProcess(SERVER) as emu:
        res = invoke("run", "--endpoint", emu.url, *ARGS, "--scenarios", "chat_short", "--repetitions", "6",
                     "--warmup", "0", "--out", str(tmp_path / "runs"), "--csv", str(files["csv"]),
                     "--jsonl", str(files["jsonl"]), "--json", str(files["json"]), "--markdown", str(files["md"]),
                     "--html", str(files["html"]))
    assert res.code == 0 and res.traceback is None, res.stderr[-2000:]
    assert invoke("report", str(_only_run(tmp_path / "runs")), "--vllm-json", str(vllm)).code == 0
    for path in [*files.values(), vllm]:
        text = path.read_text(encoding="utf-8")
        m = RAW_CONTROL.search(text)
        assert m is None, f"{path.name} holds a raw control character {m.group(0)!r}: {text[m.start() - 60:m.end() + 20]!r}"

    rows = list(csv.DictReader(files["csv"].open(newline="")))
    assert len(rows) == 6
    reasons = {r["finish_reason"] for r in rows if r["finish_reason"]}
    messages = {r["error_message"] for r in rows if r["error_message"]}
    assert reasons == {"'" + FORMULA.replace("\x1b", "\\x1b")}  # shown as text, its escape visible
    assert messages == {"'@SUM(1+1)\\x1b]0;pwned\\x07", "'+cmd|' /C calc'!A0"}
    for row in rows:
        for column, cell in row.items():
            assert not (cell.startswith(FORMULA_START) and not is_number(cell)), (column, cell)
    # numbers stay numbers: a spreadsheet reads them as written (no quote), and the JSON keeps their type
    assert all(is_number(r["ttft_s"]) and is_number(r["sent_at_s"]) for r in rows if r["ttft_s"])
    lines = [json.loads(line) for line in files["jsonl"].read_text().splitlines()]
    assert {ln["finish_reason"] for ln in lines if ln["finish_reason"]} == {FORMULA}  # JSON escapes, not rewrites
    assert all(isinstance(ln["ttft_s"], float) for ln in lines if ln["error_kind"] is None)


def test_the_json_report_of_a_server_writing_bidi_overrides_escapes_them(tmp_path: Path) -> None:
    """Found by the door fuzz: the analysed run's JSON (`--json`) carried the gate's answers with a raw
    right-to-left override; JSON lines and the vLLM file were escaped by their encoder, this one was not."""
    out = tmp_path / "run.json"
    hostile = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=8, persona="hostile_text")
    with EmulatorProcess(hostile) as emu:
        res = invoke("run", "--endpoint", emu.url, "--allow-untrusted", "--scenarios", "chat_short", "--repetitions",
                     "1", "--warmup", "0", "--out", str(tmp_path / "runs"), "--json", str(out))
    assert res.code == 0 and res.traceback is None, res.stderr[-2000:]
    text = out.read_text(encoding="utf-8")
    assert RAW_CONTROL.search(text) is None and "\\u202e" in text  # escaped, so still there for a reader
    assert "\u202e" in json.dumps(json.loads(text), ensure_ascii=False)  # the same value once parsed


@pytest.mark.parametrize(("cell", "written"), [
    ("=1+1", "'=1+1"), ("+1-1", "'+1-1"), ("-1+1", "'-1+1"), ("@A1", "'@A1"), ("\tx", "'\tx"),
    ("-2-cmd|' /C calc'!A0", "'-2-cmd|' /C calc'!A0"), ("-", "'-"),
    ("\rx", "\\x0dx"), ("\x00=1", "\\x00=1"),  # escaped first, so the cell no longer starts with them
    # healthy controls: numbers (negative ones too, as numbers or as text) and ordinary text stay as they are
    (-1.5, -1.5), (3, 3), (None, None), (True, True), ("-1.5", "-1.5"), ("+3", "+3"), ("2e-05", "2e-05"),
    ("stop", "stop"), ("chat_short/c1/r0", "chat_short/c1/r0"), ("a-b=c", "a-b=c"),
])
def test_a_cell_is_neutralised_exactly_when_a_spreadsheet_would_evaluate_it(cell: object, written: object) -> None:
    assert for_csv(cell) == written


def test_an_export_that_cannot_be_written_keeps_the_run_and_the_other_files(tmp_path: Path) -> None:
    good = tmp_path / "ok.csv"
    with EmulatorProcess(SERVER.model_copy(update={"faults": []})) as emu:
        res = invoke("run", "--endpoint", emu.url, *ARGS, "--rate", "50", "--requests", "4",
                     "--out", str(tmp_path / "runs"), "--markdown", "/dev/full", "--jsonl", "/dev/full",
                     "--csv", str(good))
    assert res.traceback is None, res.traceback
    lines = res.stderr.rstrip().splitlines()
    run_dir = _only_run(tmp_path / "runs")
    assert res.code == 2 and lines[0].startswith("error: 2 of the files asked for could not be written"), res.stderr
    assert lines[1:] == ["  --markdown /dev/full: No space left on device",
                         "  --jsonl /dev/full: No space left on device"], res.stderr
    said = " ".join(res.stderr.split())
    assert f"`rigbench report {run_dir} --markdown FILE --jsonl FILE`" in said
    assert RunReader(run_dir).header.status == "complete"  # the run is kept whole...
    assert len(list(csv.DictReader(good.open()))) == 4  # ...and so is the export that could be written
    again = tmp_path / "again.jsonl"
    assert invoke("report", str(run_dir), "--jsonl", str(again)).code == 0  # the command it names works
    assert len(again.read_text().splitlines()) == 4


@pytest.mark.parametrize("target", ["/proc/self/status", "DIR", "/proc/x/none.csv"])
def test_a_path_known_to_be_unwritable_is_refused_before_anything_runs(target: str, tmp_path: Path) -> None:
    path = str(tmp_path) if target == "DIR" else target
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", *ARGS, "--out", str(tmp_path / "runs"), "--csv", path)
    assert res.code == 2 and res.traceback is None, res.stderr
    assert res.stderr.startswith(f"error: --csv {path}") and "cannot reach" not in res.stderr, res.stderr
    assert not (tmp_path / "runs").exists()


def test_a_failed_write_leaves_no_truncated_file(tmp_path: Path) -> None:
    from rigbench.cli._paths import OutputError, write_output

    target = tmp_path / "x.csv"
    target.write_text("an older export\n")

    def pieces() -> object:
        yield "header\n"
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match="No space left on device"):
        write_output(target, pieces(), "--csv")  # type: ignore[arg-type]
    assert not target.exists()  # never a half-written file that reads as a whole one
