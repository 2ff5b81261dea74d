"""Goodput as defined (issue 33 item 4): a request meets the SLO only when it succeeded and every target set
holds; a figure that is missing (no first token, no decode phase, no end) cannot be shown to meet its target,
so it misses. Each rule is the deciding factor of a case below, beside a healthy control that differs only in
that rule; then the same through a window's goodput and the per-request export."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigbench.analysis import request_rows, summarize_load
from rigbench.analysis._goodput import meets_slo
from rigbench.records import LoadRequest, LoadWindow, RequestError, SloTargets, StreamResult
from rigbench.store import RunHeader, RunReader, RunWriter

TTFT = SloTargets(ttft_s=0.5)
ITL = SloTargets(itl_s=0.05)
E2E = SloTargets(e2e_s=2.0)
GOOD = {"ok": True, "ttft_s": 0.1, "itl_s": 0.01, "e2e_s": 1.0}


@pytest.mark.parametrize(("slo", "change", "missed"), [
    (TTFT, {"ttft_s": None}, ("ttft",)),  # no first token: TTFT cannot be shown to meet 0.5 s
    (ITL, {"itl_s": None}, ("itl",)),  # one arrival, no decode phase: no ITL to judge
    (E2E, {"e2e_s": None}, ("e2e",)),
    (TTFT, {"ttft_s": 0.5000001}, ("ttft",)),  # just over the target
    (SloTargets(ttft_s=0.5, itl_s=0.05, e2e_s=2.0), {"ok": False}, ("failed",)),  # failed, whatever its figures
])
def test_a_request_misses_when_the_figure_a_target_needs_is_missing_or_over_or_it_failed(
        slo: SloTargets, change: dict[str, object], missed: tuple[str, ...]) -> None:
    assert meets_slo(slo, **GOOD) == (True, ())  # the control: the same request, every figure within
    assert meets_slo(slo, **{**GOOD, **change}) == (False, missed)  # type: ignore[arg-type]


def test_a_missing_figure_matters_only_when_its_metric_has_a_target() -> None:
    assert meets_slo(TTFT, ok=True, ttft_s=0.1, itl_s=None, e2e_s=None) == (True, ())
    assert meets_slo(TTFT, ok=True, ttft_s=0.5, itl_s=None, e2e_s=None) == (True, ())  # at the target: met


def _run(tmp: Path, results: list[StreamResult], slo: SloTargets) -> RunReader:
    w = RunWriter(tmp / "run", RunHeader(run_id="g", created_at="2026-01-01T00:00:00+00:00", rigbench_version="0",
                                         plan={"suites": {"load": {}}}))
    for i, res in enumerate(results):
        w.append(LoadRequest(unit_id=f"load/r0/i{i}", window="r0", index=i, input_tokens_target=8,
                             output_tokens_target=4, input_tokens_measured=8, result=res))
    zero = results[0].scheduled_ns or 0
    w.append(LoadWindow(unit_id="load/r0", window="r0", mode="rate", arrival="constant", burstiness=1.0,
                        offered_rate_rps=1.0, max_concurrency=None, requests=len(results), failed=0, started_ns=zero,
                        ended_ns=max(r.done_ns or 0 for r in results), slo=slo))
    w.finish("complete")
    return RunReader(tmp / "run")


def _result(due: int, chunks_ms: list[float], *, error: bool = False) -> StreamResult:
    if error:
        return StreamResult(sent_ns=due, scheduled_ns=due, done_ns=due + 50_000_000, http_status=500,
                            error=RequestError(kind="http_status", message="HTTP 500", http_status=500))
    chunks = [due + int(ms * 1e6) for ms in chunks_ms]
    return StreamResult(sent_ns=due, scheduled_ns=due, done_ns=(chunks[-1] if chunks else due + 100_000_000),
                        chunk_ns=chunks, chunk_chars=[4] * len(chunks), chunk_kind="c" * len(chunks),
                        content="word " * len(chunks), finish_reason="length",
                        usage={"completion_tokens": max(1, len(chunks)), "prompt_tokens": 8}, http_status=200)


def test_a_window_counts_only_requests_that_showed_every_figure_within_its_target(tmp_path: Path) -> None:
    """Four requests, all fast: one streamed normally (met), one whose whole answer came in one chunk (no ITL),
    one with no generated chunk at all (no TTFT), one refused. Under a TTFT + ITL target only the first meets
    it; the CSV says which."""
    s = 1_000_000_000
    results = [_result(0, [50, 60, 70, 80]), _result(s, [50]), _result(2 * s, []), _result(3 * s, [], error=True)]
    reader = _run(tmp_path, results, SloTargets(ttft_s=0.5, itl_s=0.05))
    load = summarize_load(reader)
    assert load is not None
    [w] = load.windows
    assert w.slo is not None and w.slo.met == 1 and w.slo.requests == 4
    assert w.slo.missed == {"itl": 2, "ttft": 1, "failed": 1}  # the chunkless one missed both
    assert [r["slo_met"] for r in request_rows(reader)] == [True, False, False, False]
