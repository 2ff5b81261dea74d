"""The HTML report leads with the answer (issue 23, item 1): what was measured, the verdict and its
reasons, the headline figures, then plots, tables across runs, every section the terminal shows,
warnings collapsed per run, fingerprints with short hashes. And bad input (runs of different models,
an interrupted run, an older-format run, ten runs at once) still renders and says what differs.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from rigbench.analysis import analyze_run
from rigbench.report import render_html, rig_labels
from rigbench.store import RunReader

ROOT = Path(__file__).resolve().parents[2]
V1 = ROOT / "tests" / "golden" / "run_v1"  # format 1, llama.cpp launched by rigbench
EMU_A, EMU_B = ROOT / "tests" / "golden" / "emulator_a", ROOT / "tests" / "golden" / "emulator_b"


def _page(dirs: list[Path], **kw: bool) -> tuple[list[str], str]:
    analyses = [analyze_run(RunReader(d)) for d in dirs]
    names = rig_labels([d.name for d in dirs], [a.header for a in analyses])
    return names, render_html(names, analyses, **kw)


def _h2(page: str) -> list[str]:
    return re.findall(r"<h2>([^<]*)</h2>", page)


def test_the_first_screen_answers_then_plots_tables_details_fingerprints() -> None:
    _, page = _page([V1])
    assert "<title>SmolLM2-135M-Instruct.Q4_1.gguf on llamacpp, AMD EPYC (2 threads)</title>" in page
    h2 = _h2(page)
    order = ["What was measured", "Verdict", "Headline figures", "Plots", "Speed, run by run", "run_v1: details",
             "Warnings", "Fingerprints"]
    assert [h for h in h2 if h in order] == order, h2
    # the verdict's reason is on the first screen, not only in the collapsed warnings
    verdict = page[page.index("<h2>Verdict</h2>"):page.index("<h2>Headline figures</h2>")]
    assert "UNTRUSTED" in verdict and "the sanity gate was skipped" in verdict
    headline = page[page.index("<h2>Headline figures</h2>"):page.index("<h2>Plots</h2>")]
    assert "chat_short" in headline and "121 tok/s" in headline  # decode tok/s of chat_short (median)
    # the terminal's sections are all there: startup, roofline, client vs server timings
    details = page[page.index("run_v1: details"):page.index("<h2>Warnings</h2>")]
    for what in ("Startup (measured by rigbench)", "Decode roofline", "Client vs server", "Latency percentiles"):
        assert what in details, what
    assert '<details class="warn' in page  # warnings collapsed
    assert "TTFT and ITL over requests (CDF)" in page and "Tokens over time, one request" in page
    # published as is: no private path, no port, no 64-hex digest, nothing fetched
    assert "/root/" not in page and "52053" not in page and not re.search(r"[0-9a-f]{64}", page)
    assert not re.search(r"(src|href)=\"https?:", page)
    # empty sections are left out: this run has no quality, agent or speculative results
    assert "no agent results" not in page and "Accuracy by subject" not in page and "Acceptance length" not in page


def test_paths_keeps_them() -> None:
    _, page = _page([V1], paths=True)
    assert "/root/.cache/rigbench/models/" in page and "--port 52053" in page


def test_runs_of_different_models_and_engines_say_so_in_the_title() -> None:
    names, page = _page([EMU_A, V1])
    title = re.search(r"<h1>([^<]*)</h1>", page)
    assert title and title.group(1) == ("emulated-model vs SmolLM2-135M-Instruct.Q4_1.gguf on an unidentified "
                                         "engine vs llamacpp, AMD EPYC (2 threads) (2 runs)")
    assert names == ["emulator_a", "run_v1"]
    # the speed table across runs marks the scenario one run never measured
    side = page[page.index("<h2>Speed, run by run</h2>"):]
    assert "not measured" in side


def test_an_interrupted_run_says_it_did_not_finish_on_the_first_screen(tmp_path: Path) -> None:
    run = tmp_path / ("interrupted-" + "x" * 40)  # its resume command is longer than the verdict's line
    shutil.copytree(V1, run)
    head = json.loads((run / "run.json").read_text())
    head.update(status="running", finished_at=None)
    (run / "run.json").write_text(json.dumps(head))
    _, page = _page([run])
    verdict = page[page.index("<h2>Verdict</h2>"):page.index("<h2>Headline figures</h2>")]
    assert "this run did not finish" in verdict
    assert "<td>incomplete</td>" in page
    # issue 30 item 5: no Markdown syntax on the page: rigbench's own `command` spans are drawn as <code>
    assert "continue it with <code>rigbench run --resume " in verdict and "…</code>" in verdict  # cut, still code
    visible = re.sub(r"<style>.*?</style>|<svg.*?</svg>|<[^>]+>", " ", page, flags=re.S)
    assert "`" not in visible, visible[max(0, visible.find("`") - 80):visible.find("`") + 80]


def test_ten_runs_at_once_stay_readable() -> None:
    dirs = [V1, EMU_A, EMU_B] * 3 + [V1]
    names, page = _page(dirs)
    assert len(set(names)) == 10 and not any("#" in n for n in names), names
    assert page.count("<h3>") >= 10  # one fingerprint per run
    measured = page[page.index("<h2>What was measured</h2>"):page.index("<h2>Verdict</h2>")]
    assert measured.count("<tr>") == 11  # header + one row per run
    # one plot per kind, not one per run
    assert page.count("TTFT and ITL over requests (CDF)") == 1


def test_a_speed_figure_is_written_the_same_in_every_table_that_shows_it() -> None:
    """One rounding rule (report/_fmt.py): chat_short's decode tok/s (121.1 ± 2.5 unrounded), TTFT and
    ITL read the same in the table across runs and the run's own speed table (HTML and Markdown); the
    answer on the first screen and the summary give the median alone, to the same digits."""
    from rigbench.report import render_markdown
    from rigbench.report._answer import answer_lines

    a = analyze_run(RunReader(V1))
    _, page = _page([V1])
    md = render_markdown(a)

    def row(table_html: str) -> list[str]:  # the chat_short row's cells, tags stripped
        tr = next(t for t in re.findall(r"<tr>(.*?)</tr>", table_html) if ">chat_short<" in t)
        return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]

    headline = row(page[page.index("<h2>Headline figures</h2>"):page.index("<h2>Plots</h2>")])
    across = row(page[page.index("<h2>Speed, run by run</h2>"):page.index("run_v1: details")])
    details = page[page.index("run_v1: details"):page.index("<h2>Warnings</h2>")]
    own = row(details[details.index("<h3>Speed"):])
    md_own = [c.strip() for c in next(line for line in md.splitlines() if line.startswith("| chat_short |")
                                      and "±" in line).split("|")]
    figures = ("121±2", "374±24", "8.3±0.2")  # decode tok/s, TTFT ms, ITL ms
    for table in (across, own, md_own):
        for f in figures:
            assert f in table, (f, table)
    assert {"121 tok/s", "374 ms"} <= set(headline), headline  # the medians, same digits
    assert "chat_short 128→64: first token 374 ms, then 121 tok/s" in answer_lines(a)  # the end-of-report summary
    assert "121.1±2.5" not in page and "121.1±2.5" not in md  # control: the other rule is gone
