"""Bad input for `rigbench report` (issue 23): runs of different models or machines, an interrupted
run, runs of older formats, ten runs at once. Each renders in all three formats (terminal, Markdown,
HTML), says what differs or what is missing, and stays readable (80 columns on the terminal, one H1
and no skipped heading level in Markdown, distinct run labels).
"""

from __future__ import annotations

import html
import io
import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console

from rigbench.analysis import analyze_run
from rigbench.report import differences_terminal, render_terminal, rig_labels
from rigbench.store import RunReader
from tests.unit.cli_inproc import invoke

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "tests" / "golden" / "run_v1"  # format 1, llama.cpp launched by rigbench, AMD EPYC
EMU_A, EMU_B = ROOT / "tests" / "golden" / "emulator_a", ROOT / "tests" / "golden" / "emulator_b"


class Three:
    """One `rigbench report` of `dirs`: its terminal output, Markdown and HTML (as visible text)."""

    def __init__(self, dirs: list[Path], tmp: Path) -> None:
        tmp.mkdir(exist_ok=True)
        md, page = tmp / "r.md", tmp / "r.html"
        res = invoke("report", *map(str, dirs), "--markdown", str(md), "--html", str(page))
        assert res.code == 0 and res.traceback is None, res.stdout[-2000:] + res.stderr + str(res.traceback)
        self.terminal = res.stdout
        self.markdown = md.read_text()
        self.html = page.read_text()
        self.html_text = html.unescape(re.sub(r"<[^>]+>", " ", self.html))

    def each(self) -> list[tuple[str, str]]:
        """(medium, text) with whitespace collapsed and Markdown escapes removed."""
        md = re.sub(r"\\(.)", r"\1", self.markdown).replace("**", "")
        return [(m, " ".join(t.split())) for m, t in
                (("terminal", self.terminal), ("markdown", md), ("html", self.html_text))]


def _copy(src: Path, tmp: Path, name: str, **fingerprint: Any) -> Path:
    d = tmp / name
    shutil.copytree(src, d)
    head = json.loads((d / "run.json").read_text())
    for dotted, value in fingerprint.items():
        cur = head["fingerprint"]
        *path, last = dotted.split("__")
        for p in path:
            cur = cur[p]
        cur[last] = value
    (d / "run.json").write_text(json.dumps(head))
    return d


def _readable_at_80(dirs: list[Path]) -> None:
    analyses = [analyze_run(RunReader(d)) for d in dirs]
    console = Console(file=io.StringIO(), width=80, color_system=None, legacy_windows=False)
    for a in analyses:
        render_terminal(a, console)
    differences_terminal(console, rig_labels([d.name for d in dirs], [a.header for a in analyses]),
                         [a.header for a in analyses])
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    assert "…" not in text


def _publishable(md: str) -> None:
    levels = [len(m.group(1)) for m in re.finditer(r"^(#+) ", md, re.M)]
    assert levels[0] == 1 and levels.count(1) == 1, levels
    assert all(b - a <= 1 for a, b in itertools.pairwise(levels)), levels


def test_runs_of_different_models_and_machines_say_what_differs_in_each_format(tmp_path: Path) -> None:
    xeon = _copy(V1, tmp_path, "run_xeon", host__cpu_model="Intel(R) Xeon(R) Platinum 8480+",
                 host__gpus=["NVIDIA H200, 143771 MiB, 565.57"])
    r = Three([EMU_A, V1, xeon], tmp_path)
    for medium, text in r.each():
        assert "What differs between the rigs (against emulator_a, from their fingerprints)" in text, medium
        # the llama.cpp runs differ from the emulator in engine and model, the copy also in its machine
        for row in ("run_v1 engine unknown llamacpp what is measured",
                    # the model's path cut to its file name in Markdown and HTML (an HTML tag ends a path)
                    "run_v1 model.served_name emulated-model SmolLM2-135M-Instruct.Q4_1.gguf what is measured",
                    "run_xeon host.cpu_model AMD EPYC Intel(R) Xeon(R) Platinum 8480+ what is measured",
                    "run_xeon host.gpus NVIDIA H200, 143771 MiB, 565.57 what is measured"):
            assert row in " ".join(re.sub(r"[|│]", " ", text).split()), (medium, row)
        assert "mixes that change with any flag change" in text, medium
    assert "AMD EPYC (2 threads) vs NVIDIA H200" in r.markdown.splitlines()[0]  # the H1 names both machines
    _publishable(r.markdown)
    _readable_at_80([EMU_A, V1, xeon])


def test_runs_of_one_rig_on_two_ports_do_not_differ(tmp_path: Path) -> None:
    """The control: the emulators listened on different ports, which is no difference of rig."""
    r = Three([EMU_A, EMU_B], tmp_path)
    for medium, text in r.each():
        assert "The rigs' fingerprints do not differ (ports and temporary paths aside)." in text, medium
        assert "what is measured" not in text, medium


def test_an_interrupted_run_says_so_in_each_format(tmp_path: Path) -> None:
    run = tmp_path / "interrupted"
    shutil.copytree(V1, run)
    head = json.loads((run / "run.json").read_text())
    head.update(status="running", finished_at=None)
    (run / "run.json").write_text(json.dumps(head))
    r = Three([run], tmp_path)
    for medium, text in r.each():
        assert "this run did not finish (killed or interrupted)" in text, medium
        assert "rigbench run --resume" in text, medium
        assert "incomplete" in text, medium
    _publishable(r.markdown)
    _readable_at_80([run])


def test_runs_of_older_formats_say_what_they_did_not_record(tmp_path: Path) -> None:
    """run_v1 is format 1: no host conditions, and a fingerprint key since dropped (shown, not lost).
    A format 7 run killed before its rig was up has no fingerprint at all: every format says so."""
    bare = tmp_path / "bare"
    shutil.copytree(V1, bare)
    head = json.loads((bare / "run.json").read_text())
    head.update(format_version=7, fingerprint={}, status="interrupted")
    (bare / "run.json").write_text(json.dumps(head))
    r = Three([V1, bare], tmp_path)
    for medium, text in r.each():
        # a short heading, the rest of what it says as the line under it
        assert re.search(r"Host conditions: not recorded\W+This run predates rigbench measuring them", text), medium
        assert "recorded by an older rigbench" in text and 'engine_build = "b0-unknown"' in text, medium
        assert "not recorded (the run stopped before its rig was up)" in text, medium
        assert re.search(r"bare\W+fingerprint\W+not recorded", text), medium  # in what differs, too
    _publishable(r.markdown)
    _readable_at_80([V1, bare])


def test_ten_runs_at_once_render_in_each_format_and_stay_readable(tmp_path: Path) -> None:
    dirs = []
    for i, src in enumerate([V1, EMU_A, EMU_B] * 3 + [V1]):  # ten runs, the same rigs measured again
        d = _copy(src, tmp_path, f"{i}-{src.name}", started_at=f"2026-12-01T0{i}:00:00+00:00")
        head = json.loads((d / "run.json").read_text())
        head.update(created_at=f"2026-12-01T0{i}:00:00+00:00", source_data_id=None)
        (d / "run.json").write_text(json.dumps(head))
        dirs.append(d)
    r = Three(dirs, tmp_path / "out")
    analyses = [analyze_run(RunReader(d)) for d in dirs]
    names = rig_labels([d.name for d in dirs], [a.header for a in analyses])
    assert len(set(names)) == 10 and not any("#" in n for n in names), names
    for medium, text in r.each():
        assert all(n in text for n in names), medium
        assert text.count("What differs between the rigs") == 1, medium  # one table, not one per run
    # each run's report once in Markdown (its own heading) and in HTML (its details and fingerprint)
    assert len(re.findall(r"^## (?!Results$)", r.markdown, re.M)) == 10
    assert r.html.count(": details</h2>") == 10
    _publishable(r.markdown)
    _readable_at_80(dirs)
