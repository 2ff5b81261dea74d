"""Every run kind headlines its own answer (issue 30 item 4) on the first screen (issue 31 item 4): a rate run,
a sweep, a trace replay, multi-turn sessions and a quality-only run each open with their figures in the
terminal, the Markdown and the HTML, before any detail table, and end on them in the summary; never "no speed
results". What the speed figures mean for a user is said only where the run can stand behind them."""

from __future__ import annotations

import functools
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from rigbench.analysis import RunAnalysis, analyze_run, experience
from rigbench.report import render_html, render_markdown, render_terminal, summary_terminal
from rigbench.report._answer import answer_lines, answer_sections
from rigbench.report._blog import render_blog_markdown
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.unit.cli_inproc import invoke

ROOT = Path(__file__).resolve().parents[2]
AZURE = ROOT / "tests" / "fixtures" / "traces" / "azure_sample.csv"
FAST = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=1), output_tokens=16)
# What each kind of run is asked for, and what its answer must show on the first screen.
KINDS: dict[str, tuple[list[str], str, list[str]]] = {
    "rate": (["--rate", "40", "--requests", "20", "--slo", "ttft=500ms"], "Load: offered rate",
             ["offered req/s", "done req/s", "TTFT ms p50 / p99", "send lag ms p99", "met SLO"]),
    "sweep": (["--sweep", "--sweep-points", "2", "--requests", "12", "--slo", "ttft=5s"], "Load: sweep",
              ["Saturation:", "Knee:", "all at once"]),
    "trace": (["--trace", str(AZURE)], "Load: trace replay", ["trace ("]),
    "sessions": (["--rate", "20", "--sessions", "2", "--turns", "2"], "Load: offered rate", ["done req/s"]),
    "quality": (["--suite", "packs", "--pack", "multilingual"], "How good", ["task pack multilingual"]),
}


@functools.cache
def _runs(tmp: Path) -> dict[str, RunAnalysis]:
    out = {}
    with EmulatorProcess(FAST) as emu:
        for kind, (args, _, _) in KINDS.items():
            d = tmp / kind
            res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--allow-busy-host",
                         "--allow-unconfined", *args, "--out", str(d))
            assert res.traceback is None, res.traceback
            [run] = [p for p in d.iterdir() if p.is_dir()]
            out[kind] = analyze_run(RunReader(run))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunAnalysis]:
    return _runs(tmp_path_factory.mktemp("kinds"))


def _terminal(a: RunAnalysis, width: int = 80) -> str:
    c = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    render_terminal(a, c)
    return c.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_run_kind_opens_with_its_own_answer_in_every_format(runs: dict[str, RunAnalysis], kind: str) -> None:
    a = runs[kind]
    _, title, shown = KINDS[kind]
    assert title in [s.title for s in answer_sections(a)]
    term = _terminal(a)
    first = term[:term.index("Fingerprint")]  # the answer comes before the detail sections
    details = min(i for i in (first.find("\nLoad (rate mode)"), first.find("\nQuality\n"), len(first)) if i >= 0)
    head = term[:details]
    sec = next(s for s in answer_sections(a) if s.title == title)
    assert title in head and all(row[0] in head for row in sec.texts), head  # every row, before the details
    md = render_markdown(a)
    md_head = md[:md.index("## Fingerprint")]
    answer = md_head[md_head.index(f"## {title}"):]
    answer = answer[:answer.index("\n## ", 3)]
    assert all(s in answer for s in shown), answer  # the table's headers (in full) and its notes
    page = render_html(["r"], [a])
    headline = page[page.index("<h2>Headline figures</h2>"):]
    headline = headline[:headline.index("<h2>", 10)]
    assert f"<h3>{title}</h3>" in headline
    for text in (term, md, page):
        assert "no speed results" not in text
    # the summary at the end carries the same figures
    c = Console(file=io.StringIO(), width=1000, color_system=None, legacy_windows=False)
    summary_terminal(c, [kind], [a])
    summary = c.file.getvalue()  # type: ignore[attr-defined]
    lines = answer_lines(a)
    assert lines and all(f"  {line}\n" in summary for line in lines), summary


def test_a_load_answer_has_measured_numbers_in_every_row(runs: dict[str, RunAnalysis]) -> None:
    sec = next(s for s in answer_sections(runs["sweep"]) if s.title == "Load: sweep")
    assert len(sec.rows) >= 3  # the saturation burst and two rates
    for row in sec.texts:
        assert re.fullmatch(r"[\d.]+( \(\d+ failed\))?( \((too short|not sustained)\))?", row[2]), row  # done req/s
        assert re.fullmatch(r"\d+ / \d+", row[3]), row  # TTFT p50 / p99 ms
    load = runs["sweep"].sections["load"]
    knee = next(n.text for n in sec.notes if n.text.startswith("Knee:"))
    # the knee is said as the bound it is: between two rates, a lower bound when no rate missed, else not bounded
    k = load.knee
    if k is None or (k.low_rps is None and k.high_rps is None):
        assert "not bounded" in knee, knee
    elif k.bracketed:
        assert f"between {k.low_rps:.3g} and {k.high_rps:.3g} req/s" in knee, knee
    elif k.low_rps is not None:
        assert f"≥ {k.low_rps:.3g} req/s" in knee and "lower bound" in knee, knee
    else:
        assert f"< {k.high_rps:.3g} req/s" in knee, knee


def test_a_plan_report_of_load_runs_carries_their_numbers(runs: dict[str, RunAnalysis]) -> None:
    names, analyses = ["rate", "sweep"], [runs["rate"], runs["sweep"]]
    md = render_blog_markdown(names, analyses, [])
    results = md[md.index("## Results"):]
    assert "### Load: offered rate" in results and "### Load: sweep" in results
    rows = [line for line in results.splitlines() if line.startswith(("| rate |", "| sweep |"))
            and "| complete |" not in line]  # the load tables' rows, not the status table's
    assert len(rows) >= 4 and all(re.search(r"\| \d+ / \d+ \|", r) for r in rows)  # TTFT p50 / p99 measured
    assert "No speed results" not in md


def test_what_a_speed_row_means_for_a_user_follows_the_stated_limits() -> None:
    from rigbench.analysis import ScenarioSpeed, Stat

    def row(ttft: float, decode: float, **kw: object) -> ScenarioSpeed:
        def s(v: float) -> Stat:
            return Stat(n=5, median=v, mean=v, std=0.0, min=v, max=v)

        return ScenarioSpeed(scenario="chat_short", concurrency=1, input_tokens_target=128, output_tokens_target=64,
                             input_tokens_measured=None, prompt_tokens_reported=None, input_mismatches=0, requests=5,
                             failed=0, attainment_min=1.0, e2e_tok_s=s(decode), decode_tok_s=s(decode), ttft_s=s(ttft),
                             ttft_not_comparable=None, itl_mean_s=None, itl_gaps_s=None, e2e_latency_s=None,
                             aggregate_tok_s=None, tokens_per_chunk=None, prefill_share=None, **kw)  # type: ignore[arg-type]

    assert experience(row(0.95, 6.0)).kind == "interactive"
    assert experience(row(1.05, 6.0)).kind == "waits"  # past the 1 s flow limit
    assert experience(row(9.9, 6.0)).kind == "waits"
    assert experience(row(10.5, 6.0)).kind == "too slow"  # past the 10 s attention limit
    assert experience(row(0.2, 5.0)).kind == "slower than reading"  # under 5.3 tok/s
    assert experience(row(0.2, 100.0), trusted=False).kind == "not judged"
    assert experience(row(0.2, 100.0, latency_not_measurable="buffered")).kind == "not judged"


def test_the_default_runs_first_screen_fits_80_by_50(runs: dict[str, RunAnalysis]) -> None:
    """The golden default-shaped run (four scenarios): verdict, answer and warnings within 50 lines of 80."""
    a = analyze_run(RunReader(ROOT / "tests" / "golden" / "run_v1"))
    term = _terminal(a)
    first = term.splitlines()[:50]
    assert all(len(line) <= 80 for line in term.splitlines())
    screen = "\n".join(first)
    for s in ("verdict UNTRUSTED", "How fast", "chat_short", "summarization", "first token", "decode"):
        assert s in screen, s
    assert "Startup" in screen  # the details start on the first screen: the answer before them is short


@pytest.mark.parametrize(("persona", "gate_passes"), [(None, False), ("healthy", True)])
def test_the_readmes_emulate_line_says_what_the_gate_makes_of_it(tmp_path: Path, persona: str | None,
                                                                 gate_passes: bool) -> None:
    """Issue 30 item 8: README's `rigbench emulate` line: without --answers (persona "healthy") the emulator's
    filler replies fail the known-answer gate, with it they pass."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "rigbench emulate --port 8000 --answers" in readme and "its replies are filler" in readme
    with EmulatorProcess(FAST.model_copy(update={"persona": persona})) as emu:
        res = invoke("run", "--endpoint", emu.url, "--scenarios", "chat_short", "--repetitions", "1", "--warmup",
                     "0", "--allow-busy-host", "--allow-untrusted", "--out", str(tmp_path))
    assert res.traceback is None, res.traceback
    [run] = [p for p in tmp_path.iterdir() if p.is_dir()]
    [gate] = list(RunReader(run).raw_records("sanity"))
    assert gate["trusted"] is gate_passes, gate["reasons"]


def test_a_skipped_scenario_is_a_note_in_the_answer_and_the_speed_table_never_a_row_of_empty_figures() -> None:
    """Issue 30 item 6: `--profile full` on the embedded rig skips the shapes that do not fit its context; the
    report names each with its reason, as a note, in every format, and its tables hold only measured rows."""
    a = analyze_run(RunReader(ROOT / "tests" / "golden" / "run_v1"))
    assert a.speed is not None
    reason = "needs 16512 tokens of context, the server serves 8192 per request"
    skipped = a.model_copy(update={"speed": a.speed.model_copy(update={"skipped": {"long_summary": reason}})})
    term = _terminal(skipped)
    speed = term[term.index("\nSpeed\n"):term.index("Latency percentiles")]
    assert f"Skipped: long_summary: {reason}." in " ".join(speed.split())
    assert not [line for line in speed.splitlines() if line.lstrip().startswith("long_summary ")]  # no row
    assert f"long_summary: skipped: {reason}" in " ".join(term[:term.index("\nSpeed\n")].split())  # the answer
    md = render_markdown(skipped)
    assert f"Skipped: long_summary: {reason}." in md and "| long_summary |" not in md.split("## Speed")[1]
    assert f"long_summary: skipped: {reason}" in answer_lines(skipped)


def test_what_the_figures_mean_for_a_user_is_said_only_for_a_trusted_run_on_a_quiet_host() -> None:
    """A busy host kept by --allow-busy-host: the figures hold the host's load, so the answer does not call them
    interactive (or too slow) and says why; the same run on a quiet host is judged."""
    from rigbench.analysis import assess_host
    from rigbench.records import HostConditions
    from rigbench.store import TrustVerdict

    a = analyze_run(RunReader(ROOT / "tests" / "golden" / "run_v1"))
    trusted = a.model_copy(update={"header": a.header.model_copy(update={"trust": TrustVerdict(trusted=True)})})
    win = HostConditions(unit_id="host/chat_short/c1", window="chat_short c=1", scenario="chat_short", concurrency=1,
                         started_ns=0, ended_ns=2 * 10**9, engine="local", engine_pids=[42], cpus=[0, 1],
                         busy_cpu_s=2.9, engine_cpu_s=0.9, rigbench_cpu_s=0.1, steal_s=0.0)
    busy = trusted.model_copy(update={"sections": {**trusted.sections, "host": assess_host([win])}})
    assert busy.sections["host"].busy
    [quiet_sec] = [s for s in answer_sections(trusted) if s.title == "How fast"]
    [busy_sec] = [s for s in answer_sections(busy) if s.title == "How fast"]
    assert "for a user" in quiet_sec.head and "interactive" in [c for r in quiet_sec.texts for c in r]
    assert "for a user" not in busy_sec.head
    assert not {"interactive", "too slow to wait for"} & {c for r in busy_sec.texts for c in r}
    assert any("the host was busy while it measured" in n.text for n in busy_sec.notes)
