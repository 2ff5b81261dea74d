"""Reports a user can publish unchanged (issue 23): a Markdown post whose H1 names model, engine and
machine, with consistent heading levels, constant columns in one caption line, no whole bold
paragraph, no home-directory path or ephemeral port unless asked for; rigs told apart by what
really differs, never by `#1`.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rigbench.analysis import analyze_run, fingerprint_differences, roofline
from rigbench.report import render_markdown, rig_labels
from rigbench.report._hardware import roofline_markdown
from rigbench.store import RunReader

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "tests" / "golden" / "run_v1"  # a launched llama.cpp run: /root/... paths, --port 52053
EMU_A, EMU_B = ROOT / "tests" / "golden" / "emulator_a", ROOT / "tests" / "golden" / "emulator_b"


def _headings(md: str) -> list[int]:
    return [len(m.group(1)) for m in re.finditer(r"^(#+) ", md, re.M)]


def _assert_publishable(md: str) -> None:
    levels = _headings(md)
    assert levels[0] == 1 and levels.count(1) == 1, levels  # one H1, first
    assert all(b - a <= 1 for a, b in itertools.pairwise(levels)), levels  # never skips a level
    bold_paragraphs = [line for line in md.splitlines() if re.fullmatch(r"\s*(> |- )?\*\*[^*]+\*\*\.?\s*", line)]
    assert not bold_paragraphs, bold_paragraphs


def test_a_single_run_reads_as_a_post() -> None:
    md = render_markdown(analyze_run(RunReader(V1)))
    assert md.startswith("# SmolLM2-135M-Instruct.Q4_1.gguf on llamacpp, AMD EPYC (2 threads)\n")
    _assert_publishable(md)
    # private paths and the port the server happened to get are gone, the file names stay
    assert "/root/" not in md and "/tmp/" not in md and "52053" not in md
    assert "SmolLM2-135M-Instruct.Q4_1.gguf --host 127.0.0.1 --port PORT" in md
    # the three constant columns leave the table for one caption line (a note under it)
    caption = next(line for line in md.splitlines() if line.startswith("- Every row:"))
    assert "concurrency 1" in caption and "1.00 tokens per chunk" in caption and '"usage"' in caption
    head = next(line for line in md.splitlines() if line.startswith("| scenario | in→out"))
    assert "concurrency" not in head and "tokens per chunk" not in head and "token counts from" not in head


def test_paths_keeps_what_a_private_report_wants() -> None:
    md = render_markdown(analyze_run(RunReader(V1)), paths=True)
    assert "/root/.cache/rigbench/models/" in md and "--port 52053" in md


def test_a_report_of_several_runs_nests_each_run_under_one_title(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    res = subprocess.run([sys.executable, "-m", "rigbench", "report", str(EMU_A), str(EMU_B), str(V1),
                          "--markdown", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    md = out.read_text()
    _assert_publishable(md)
    assert md.splitlines()[0] == ("# emulated-model vs SmolLM2-135M-Instruct.Q4_1.gguf on an unidentified engine "
                                  "vs llamacpp, AMD EPYC (2 threads) (3 runs)")
    assert re.search(r"^## emulator_b: emulated-model", md, re.M)
    # the emulators differ only in the port they listened on; the llama.cpp run in engine and model
    differs = md[md.index("### What differs between the rigs (against emulator_a"):]
    differs = differs[:differs.index("\n### ", 5)]
    assert "| run_v1 | engine | unknown | llamacpp | **what is measured** |" in differs
    assert "| run_v1 | model.served_name | emulated-model |" in differs and "| emulator_b |" not in differs
    assert "36151" not in md and "/root/" not in md


def test_rigs_that_differ_only_in_their_port_do_not_differ() -> None:
    a, b = (RunReader(p).header.fingerprint for p in (EMU_A, EMU_B))
    assert a is not None and b is not None
    assert a.endpoint != b.endpoint  # the emulators listened on different ports...
    assert fingerprint_differences(a, b) == []  # ...which is no difference between the rigs
    changed = b.model_copy(update={"endpoint": "http://10.0.0.7:8000/v1"})  # control: another host is one
    assert [d.field for d in fingerprint_differences(a, changed)] == ["endpoint"]


def test_two_runs_of_one_rig_are_labelled_by_what_differs_never_by_number(tmp_path: Path) -> None:
    h = RunReader(V1).header
    assert h.fingerprint is not None and h.fingerprint.argv is not None
    other = h.model_copy(update={"fingerprint": h.fingerprint.model_copy(
        update={"argv": [*h.fingerprint.argv, "-t", "2"]})})
    labels = rig_labels(["run_v1", "run_v1"], [h, other])
    assert labels == ["run_v1 (t=off)", "run_v1 (t=2)"]
    same = rig_labels(["run_v1", "run_v1"], [h, h])  # nothing differs, not even the time: numbered, not "#1"
    assert len(set(same)) == 2 and not any("#" in x for x in same)


def test_runs_are_labelled_by_their_flags_or_model_never_by_the_port_they_happened_to_get() -> None:
    """Issue 30 item 5: two launched rigs on random ports read "llamacpp (port=47501)" and "(port=37947)"."""
    h = RunReader(V1).header
    fp = h.fingerprint
    assert fp is not None and fp.argv is not None and "--port" in fp.argv

    def run(port: str, *extra: str, model: str | None = None):  # type: ignore[no-untyped-def]
        argv = [port if a == fp.argv[fp.argv.index("--port") + 1] else a for a in fp.argv] + list(extra)
        model_update = {"model": fp.model.model_copy(update={"served_name": model})} if model else {}
        return h.model_copy(update={"fingerprint": fp.model_copy(update={"argv": argv, **model_update})})

    labels = rig_labels(["run_v1", "run_v1"], [run("47501", "-np", "4"), run("37947", "-np", "8")])
    assert labels == ["run_v1 (np=4)", "run_v1 (np=8)"]
    assert not any("port" in x or "47501" in x for x in labels)
    by_model = rig_labels(["run_v1", "run_v1"], [run("47501", model="qwen3-0.6b"), run("37947", model="smollm2")])
    assert by_model == ["run_v1 (qwen3-0.6b)", "run_v1 (smollm2)"]
    only_port = rig_labels(["run_v1", "run_v1"], [run("47501"), run("37947")])  # nothing else differs: the time
    assert not any("port" in x for x in only_port) and len(set(only_port)) == 2
    # one launched with --port, the other on llama-server's default port: still no difference between the rigs
    i = fp.argv.index("--port")
    default_port = h.model_copy(update={"fingerprint": fp.model_copy(update={"argv": fp.argv[:i] + fp.argv[i + 2:]})})
    one_port = rig_labels(["run_v1", "run_v1"], [run("47501", "-np", "4"), default_port])
    assert not any("port" in x or "PORT" in x for x in one_port) and one_port[0] == "run_v1 (np=4)", one_port


@pytest.mark.parametrize(("source", "basis"), [("probed on this machine: stream copy", "probed"),
                                                ("H200 datasheet", "datasheet")])
def test_the_bandwidth_source_is_not_said_twice(source: str, basis: str) -> None:
    md = roofline_markdown(roofline(10**9, 100.0, bandwidth_source=source, bandwidth_basis=basis))  # type: ignore[arg-type]
    assert "probed: probed" not in md
    assert f"({source})" in md if source.startswith(basis) else f"({basis}: {source})" in md


def test_check_says_one_slot_not_one_slots() -> None:
    from rigbench.honesty import PreflightInput, preflight

    one = {f.id: f for f in preflight("llama-server -m m.gguf -np 1", PreflightInput(concurrency=[4])).findings}
    assert "1 slot (" in one["concurrency_over_slots"].evidence and "1 slots" not in one["concurrency_over_slots"].problem
    two = {f.id: f for f in preflight("llama-server -m m.gguf -np 2", PreflightInput(concurrency=[4])).findings}
    assert "2 slots (" in two["concurrency_over_slots"].evidence  # control: the plural stays


def _with_failed_gate(tmp: Path) -> Path:
    """run_v1 whose known-answer gate failed: one answer errored (the request failed), one was wrong."""
    from rigbench.records import SanityAnswer, SanityVerdict

    run = tmp / "failed-gate"
    shutil.copytree(V1, run)
    head = json.loads((run / "run.json").read_text())
    head["source_data_id"] = None  # a record added below: no recorded id to contradict
    (run / "run.json").write_text(json.dumps(head))
    errored = SanityAnswer(question_id="en_capital_france", language="en", prompt="Capital of France?", answer="",
                           reasoning_chars=0, finish_reason=None, error="timed out after 30 s", correct=False)
    wrong = errored.model_copy(update={"question_id": "en_count", "answer": "seven", "error": None,
                                       "finish_reason": "stop"})
    verdict = SanityVerdict(trusted=False, answers=[errored, wrong], max_tokens=64,
                            reasons=["en_capital_france: request failed: timed out after 30 s",
                                     "en_count: wrong answer: 'seven'"])
    with (run / "records.jsonl").open("a") as f:
        f.write(verdict.model_dump_json() + "\n")
    return run


def test_a_failed_gate_reads_as_a_post_with_its_reasons_marked(tmp_path: Path) -> None:
    md = render_markdown(analyze_run(RunReader(_with_failed_gate(tmp_path))))
    _assert_publishable(md)  # the gate's error notes are list items with a bold lead, not bold paragraphs
    assert "- **✗ en_capital_france**: request failed: timed out after 30 s" in md
    assert "- **✗ en_count**: wrong answer" in md


def test_a_long_section_title_is_a_short_heading_and_a_line_under_it() -> None:
    md = render_markdown(analyze_run(RunReader(EMU_B)))  # a run from before host conditions were recorded
    lines = md.splitlines()
    at = lines.index("## Host conditions: not recorded")
    assert lines[at + 2].startswith("This run predates rigbench measuring them, so a busy host")
    long_headings = [line for line in lines if line.startswith("#") and len(line) > 100]
    assert not long_headings, long_headings
