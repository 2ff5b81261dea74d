"""Terminal reports at 80 and 200 columns (fixed-width rich consoles): no line wider than the
terminal, no name cut ("chat_sh…"), no row of a table folded into a tall cell."""

from __future__ import annotations

import functools
import io
import re
from pathlib import Path

import pytest
from rich.console import Console, RenderableType

from rigbench.analysis import RunAnalysis, analyze_run
from rigbench.report import render_terminal
from rigbench.report._ls import RunListing, runs_table
from rigbench.report._speed import latency_table, speed_table
from rigbench.report._telemetry import telemetry_terminal
from rigbench.store import RunReader

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
H200 = ROOT / "benchmarks" / "results" / "h200"
SCENARIOS = ["chat_short", "chat_long_context", "code_generation", "summarization"]


@functools.cache
def _analysis(path: Path) -> RunAnalysis:
    return analyze_run(RunReader(path))


def _console(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)


def _text(renderable: RenderableType | None, width: int) -> str:
    c = _console(width)
    if renderable is not None:
        c.print(renderable)
    return c.file.getvalue()  # type: ignore[attr-defined]


def _fits(text: str, width: int) -> None:
    wide = [line for line in text.splitlines() if len(line.rstrip()) > width]
    assert not wide, wide[:3]
    assert "…" not in text, [line for line in text.splitlines() if "…" in line][:3]


def _row_lines(text: str, names: list[str]) -> dict[str, int]:
    """Lines each named row takes: from its name's line to the next name (or the table's end)."""
    lines = text.splitlines()
    starts = [(i, n) for i, line in enumerate(lines) for n in names if line.lstrip().startswith(n + " ")]
    out = {}
    for k, (i, n) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else next(
            (j for j in range(i + 1, len(lines)) if not lines[j].strip()), len(lines))
        out[n] = end - i
    return out


@pytest.mark.parametrize("width", [80, 200])
def test_speed_and_latency_tables_keep_whole_names_one_line_per_row(width: int) -> None:
    speed = _analysis(GOLDEN / "run_v1").speed
    assert speed is not None
    text = _text(speed_table(speed), width)
    _fits(text, width)
    heights = _row_lines(text, SCENARIOS)
    assert set(heights) == set(SCENARIOS) and max(heights.values()) == 1, heights
    lat = _text(latency_table(speed), width)
    _fits(lat, width)
    assert all(s in lat for s in SCENARIOS) and len(re.findall(r"ITL per request +\d", lat)) == 4


@pytest.mark.parametrize("width", [80, 200])
def test_multi_concurrency_speed_table_fits(width: int) -> None:
    speed = _analysis(GOLDEN / "emulator_a").speed
    assert speed is not None and {r.concurrency for r in speed.rows} == {1, 2}
    text = _text(speed_table(speed), width)
    _fits(text, width)
    assert max(_row_lines(text, ["chat_short", "code_generation"]).values()) == 1


@pytest.mark.parametrize("width", [80, 200])
def test_telemetry_cross_check_keeps_scenario_names(width: int) -> None:
    a = _analysis(H200 / "20261129-191906-h200-depth4-1c8a")
    c = _console(width)
    telemetry_terminal(*a.sections["telemetry"], c)
    text = c.file.getvalue()  # type: ignore[attr-defined]
    _fits(text, width)
    heights = _row_lines(text, SCENARIOS)
    assert set(heights) == set(SCENARIOS) and max(heights.values()) == 1, heights


@pytest.mark.parametrize("width", [80, 200])
def test_ls_at_80_and_200_columns(width: int) -> None:
    """Issue 30 item 8: one row per run at any width (it wrapped over three lines at 80), with its headline."""
    runs = [RunListing(f"20261129-19{i}407-h200-depth15-a05e", "2026-11-29T19:14:07+00:00", "llamacpp", "target",
                       "speed,quality,agent", "complete", "UNTRUSTED", "781183611c45f3e6", "chat_short 89.8 tok/s")
            for i in range(3)]
    long_model = [r._replace(run=r.run + "x", model="SmolLM2-135M-Instruct.Q4_1-with-a-long-name") for r in runs]
    for rows in (runs, long_model):
        text = _text(runs_table("runs in runs", rows, width), width)
        _fits(text, width)
        body = [line for line in text.splitlines() if "20261129" in line]
        assert len(body) == 3 and all("chat_short 89.8 tok/s" in line and "UNTRUSTED" in line for line in body)
        assert all(r.run in text for r in rows)  # whole ids, never folded
    assert ("2026-11-29 19:14" in _text(runs_table("runs", runs, width), width)) == (width >= 150)
    assert "target" in _text(runs_table("runs", runs, width), width)  # the model, where it fits
    # a run that did not finish shows its status where the verdict would be
    unfinished = _text(runs_table("runs", [runs[0]._replace(status="incomplete", verdict="–")], 80), 80)
    assert "incomplete" in unfinished


@pytest.mark.parametrize("width", [80, 200])
def test_whole_reports_fit(width: int) -> None:
    for run in (GOLDEN / "run_v1", GOLDEN / "emulator_b", H200 / "20261129-191407-h200-nodraft-5101"):
        c = _console(width)
        render_terminal(_analysis(run), c)
        text = c.file.getvalue()  # type: ignore[attr-defined]
        _fits(text, width)
        for name in ("chat_short", "code_generation"):
            assert name in text
    # a failed gate's ten reasons are counted in the header, not listed there one by one
    head = text[: text.index("Startup")]
    assert head.count("UNTRUSTED:") == 3 and "and 7 more UNTRUSTED reasons" in head


def test_the_panels_more_reasons_line_says_where_they_are() -> None:
    # a failed gate: the reasons the panel leaves out are the gate's, printed with the sanity section below
    a = _analysis(H200 / "20261129-191407-h200-nodraft-5101")
    c = _console(80)
    render_terminal(a, c)
    text = c.file.getvalue()  # type: ignore[attr-defined]
    flat = " ".join(text.split())
    assert "more UNTRUSTED reasons (the sanity gate's, listed with it below)" in flat
    assert "--markdown FILE" not in flat  # not sent to another command for what is printed here
    gate = " ".join(text[text.index("Sanity gate"):].split())
    untrusted = [w.removeprefix("UNTRUSTED: ") for w in a.warnings if w.startswith("UNTRUSTED")]
    assert all(" ".join(r.split())[:40] in gate for r in untrusted[3:]), untrusted[3:]
    # control: reasons printed nowhere else keep the pointer to the Markdown report, which lists every one
    other = a.model_copy(update={"warnings": [f"UNTRUSTED: reason {i}" for i in range(6)]})
    c = _console(80)
    render_terminal(other, c)
    flat = " ".join(c.file.getvalue().split())  # type: ignore[attr-defined]
    assert "and 3 more UNTRUSTED reasons (every one: rigbench report" in flat and "--markdown FILE)" in flat


def test_a_wide_speed_table_splits_by_columns_at_80_instead_of_cutting_the_aggregate() -> None:
    """Issue 30 item 8: at 80 columns the speed table clipped its aggregate column when concurrency > 1 (the
    full profile's shapes, four levels, figures of five digits with their spread)."""
    from rigbench.analysis import Stat

    speed = _analysis(GOLDEN / "emulator_a").speed
    assert speed is not None
    big = Stat(n=40, median=12345.6, mean=12345.6, std=1234.5, min=1.0, max=2e4, p90=1.5e4, p99=1.9e4)
    rows = [speed.rows[0].model_copy(update={"scenario": sc, "concurrency": c, "input_tokens_target": 16384,
                                             "output_tokens_target": 1024, "e2e_tok_s": big, "decode_tok_s": big,
                                             "ttft_s": big, "itl_mean_s": big, "aggregate_tok_s": big,
                                             "tokens_per_chunk": 1.5})
            for sc in SCENARIOS for c in (1, 2, 4, 8)]
    c = _console(80)
    from rigbench.report._cells import section_terminal
    from rigbench.report._speed import speed_section

    section_terminal(c, speed_section(speed.model_copy(update={"rows": rows})), layout="simple")
    text = c.file.getvalue()  # type: ignore[attr-defined]
    _fits(text, 80)
    # every figure whole, in every row: e2e, decode and aggregate tok/s, TTFT and ITL (ms)
    assert "agg" in text and text.count("12346±1234") == 3 * 16
    assert text.count("12345600±1234500") == 16 and text.count("12345600.0±1234500.0") == 16
    figures = [line for line in text.splitlines() if "±" in line and "standard deviation" not in line]
    assert all(line.split()[0] in SCENARIOS for line in figures)  # no row folds into a tall cell


def test_a_trusted_multi_concurrency_answer_splits_by_columns_at_80_never_into_cards() -> None:
    """The first screen of a trusted run at several concurrencies (the "for a user" column, the lowest level's
    figures and the highest level's aggregate): at 80 columns the answer table splits by columns, each part
    repeating the scenario, one line per scenario, every figure whole; it never turns into cards (a card
    per scenario broke the two-line headers apart and took 40 lines of the first screen)."""
    from rigbench.analysis import Stat
    from rigbench.store import TrustVerdict

    a = _analysis(GOLDEN / "emulator_a")
    assert a.speed is not None

    def stat(v: float) -> Stat:
        return Stat(n=40, median=v, mean=v, std=v / 10, min=v, max=v, p90=v, p99=v)

    rows = [a.speed.rows[0].model_copy(update={
        "scenario": sc, "concurrency": c, "input_tokens_target": 16384, "output_tokens_target": 1024,
        "e2e_tok_s": stat(123.4), "decode_tok_s": stat(123.4), "ttft_s": stat(12.3 if sc == "summarization" else 0.5),
        "aggregate_tok_s": stat(12345.6), "latency_not_measurable": None, "ttft_not_comparable": None})
        for sc in SCENARIOS for c in (1, 2, 4, 8)]
    trusted = a.model_copy(update={"speed": a.speed.model_copy(update={"rows": rows}), "warnings": [],
                                   "header": a.header.model_copy(update={"trust": TrustVerdict(trusted=True)})})
    c = _console(80)
    render_terminal(trusted, c)
    text = c.file.getvalue()  # type: ignore[attr-defined]
    _fits(text, 80)
    answer = text[text.index("How fast"):text.index("For a user:")]
    assert "too slow to wait for" in answer and "c=8: tok/s" in answer
    assert answer.count("12346 (123 each)") == 4 and answer.count("123 tok/s") == 4  # every figure, whole
    # one line per scenario in each part of the split table (a card would give each scenario a heading line
    # followed by "  column  value" lines)
    for sc in SCENARIOS:
        lines = [line for line in answer.splitlines() if line.split()[:1] == [sc]]
        assert lines and all("16384→1024" in line for line in lines), (sc, answer)
    assert len(answer.splitlines()) < 25, answer


@pytest.mark.parametrize("width", [80, 150])
def test_ls_never_cuts_a_run_id_or_a_figure_when_the_headline_is_long(width: int) -> None:
    """A run that measured speed and load has a two-part headline; with long run ids it cannot share one line
    at 80 columns: the headline wraps, the ids and verdicts stay whole (they were cut to "20261129-19…" and "UN…")."""
    runs = [RunListing(f"20261129-19{i}407-h200-depth15-a05e-long", "2026-11-29T19:14:07+00:00",
                       "llamacpp b1234 with a long version", "SmolLM2-135M-Instruct.Q4_1-with-a-long-name",
                       "speed,quality,agent,load", "complete", "UNTRUSTED", "781183611c45f3e6",
                       "chat_short 89.8 tok/s; saturation 24.5 req/s") for i in range(2)]
    text = _text(runs_table("runs", runs, width), width)
    _fits(text, width)
    assert all(r.run in text for r in runs) and text.count("UNTRUSTED") == 2
    words = text.split()  # the headline may wrap between its words, never inside a figure
    assert words.count("89.8") == 2 and words.count("24.5") == 2 and words.count("saturation") == 2
