"""The speed-up model against the recorded H200 runs (benchmarks/results/h200, docs/gpu-validation.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigbench.analysis._speculation import acceptance_by_scenario, fit_speculation
from rigbench.store import RunReader

H200 = Path(__file__).parents[2] / "benchmarks" / "results" / "h200"


def run(label: str) -> RunReader:
    return RunReader(next(p for p in H200.iterdir() if p.is_dir() and f"-{label}-" in p.name))


def test_acceptance_length_comes_from_the_servers_per_request_timings() -> None:
    acc = acceptance_by_scenario(run("depth4"))
    assert set(acc) == {"chat_short", "chat_long_context", "code_generation", "summarization"}
    assert all(3.0 < v < 3.8 for v in acc.values())  # --spec-synth-len 3.4
    assert acceptance_by_scenario(run("nodraft")) == {}


def test_calibrated_draft_cost_predicts_the_other_scenarios() -> None:
    fit = fit_speculation(run("nodraft"), run("depth4"))
    assert fit is not None and fit.calibrated_on == "code_generation"
    assert fit.draft_cost_ratio == pytest.approx(0.62, abs=0.05)
    for p in fit.predictions:
        assert p.measured_speedup is not None
        assert p.predicted_speedup == pytest.approx(p.measured_speedup, rel=0.05), p.scenario
    # the free-drafter bound over-predicts decode-heavy scenarios badly: why c exists
    free = {p.scenario: p for p in fit.free_drafter}
    assert free["chat_short"].predicted_speedup > 1.5 * free["chat_short"].measured_speedup  # type: ignore[operator]


def test_summarization_gains_least_because_it_is_mostly_prefill() -> None:
    fit = fit_speculation(run("nodraft"), run("depth15"))
    assert fit is not None
    by = {p.scenario: p for p in fit.predictions}
    assert by["summarization"].prefill_share > 0.5
    assert min(fit.predictions, key=lambda p: p.measured_speedup or 0).scenario == "summarization"
