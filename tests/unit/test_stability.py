"""Stability of each speed series over repetitions: CV, drift and outliers, warned in every report format
(issue 25, item 2). Each condition has a steady control that must draw no warning."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from rich.console import Console

from rigbench.analysis import analyze_run, stability_warnings
from rigbench.analysis._stability import _one
from rigbench.report import render_html, render_markdown, render_terminal
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.unit.cli_inproc import invoke

STEADY = [100.0, 101.0, 99.5, 100.4, 100.2]


def _series(values: list[float], series: str = "decode_tok_s"):  # type: ignore[no-untyped-def]
    return _one("chat_short", 1, series, dict(enumerate(values)))


def test_a_steady_series_draws_no_warning() -> None:
    s = _series(STEADY)
    assert s.cv is not None and s.cv < 0.01 and not s.unstable and not s.drifting and s.outliers == []
    assert stability_warnings([s]) == []


def test_a_spread_series_is_unstable_with_its_cv_and_remedy() -> None:
    s = _series([100.0, 60.0, 130.0, 80.0, 140.0])
    [w] = [x for x in stability_warnings([s]) if x.startswith("Unstable")]
    assert w == ("Unstable: chat_short (c=1) decode tok/s: CV 33% over 5 repetitions; run on a quiet host or "
                 "raise --repetitions")


def test_a_falling_series_is_drift_named_with_the_trend_test() -> None:
    s = _series([110.0, 108.0, 104.0, 99.0, 95.0, 92.0])
    assert s.drifting and s.drift is not None and s.drift < -0.1 and s.trend_p is not None and s.trend_p < 0.05
    assert any(w.startswith("Drift: chat_short (c=1) decode tok/s fell") for w in stability_warnings([s]))
    # control: the same values in no order have no trend
    assert not _series([104.0, 95.0, 110.0, 92.0, 108.0, 99.0]).drifting


def test_one_interrupted_repetition_is_an_outlier_by_mad() -> None:
    s = _series([100.0, 101.0, 99.5, 40.0, 100.4, 100.2])
    assert s.outliers == [3]
    assert any(w.startswith("Outliers: chat_short (c=1) decode tok/s: repetition 3 of 6") for w in
               stability_warnings([s]))
    assert _series(STEADY).outliers == []


def test_too_few_repetitions_and_ttft_are_shown_not_judged() -> None:
    assert not _series([100.0, 50.0]).unstable  # two values: a CV, no verdict
    assert stability_warnings([_series([0.005, 0.009, 0.004, 0.008, 0.003], "ttft_s")]) == []


def test_every_report_format_shows_the_stability_table_and_warning(tmp_path: Path) -> None:
    script = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=16)
    with EmulatorProcess(script) as emu:
        res = invoke("run", "--endpoint", emu.url, "--scenarios", "chat_short", "--repetitions", "5", "--warmup",
                     "0", "--no-sanity", "--allow-busy-host", "--out", str(tmp_path))
    assert res.traceback is None, res.traceback
    [run_dir] = [p for p in tmp_path.iterdir() if p.is_dir()]
    a = analyze_run(RunReader(run_dir))
    stab = a.sections["stability"]
    assert {(s.series, len(s.values)) for s in stab} == {("decode_tok_s", 5), ("aggregate_tok_s", 5), ("ttft_s", 5)}
    # the same run, as if its decode series had spread: the warning and the marked table in every format
    unstable = _series([100.0, 60.0, 130.0, 80.0, 140.0])
    a = a.model_copy(update={"warnings": [*a.warnings, *stability_warnings([unstable])],
                             "sections": {**a.sections, "stability": [unstable]}})
    buf = StringIO()
    render_terminal(a, Console(file=buf, width=200))
    for text in (buf.getvalue(), render_markdown(a), render_html(["r"], [a])):
        assert "Unstable: chat_short (c=1) decode tok/s: CV 33% over 5 repetitions" in text
        assert "Stability over repetitions: 1 series unstable" in text
