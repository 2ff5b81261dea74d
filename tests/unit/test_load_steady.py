"""Load windows measured in steady state (issue 30 item 1, issue 33 item 4): a rate's ramp and drain are left
out of its figures, a rate the server cannot sustain is found, a window too short for a steady interval is
marked and left out of the knee, and the knee is a bound, said the same way in every format.

The first tests hand the analysis exact schedules (a server with unlimited slots, a single FIFO server past its
capacity); each rule's boundary is the deciding factor of one case. The last ones run the real suite against
the emulator given a capacity (`EmulatorScript.slots`).
"""

from __future__ import annotations

import html
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from rigbench.analysis import analyze_run, summarize_load
from rigbench.analysis._load import BACKLOG_SHARE, STEADY_MIN_REQUESTS, WARMUP_SHARE
from rigbench.records import LoadRequest, LoadWindow, RequestError, SloTargets, StreamResult
from rigbench.report import render_html, render_json, render_markdown, render_terminal
from rigbench.store import RunHeader, RunReader, RunWriter
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.unit.cli_inproc import Result, invoke

S = 1_000_000_000  # ns per second
ZERO = 10 * S

# (intended start, end) of each request, seconds from the window's zero; failed requests as a third item False
Req = tuple[float, float] | tuple[float, float, bool]


def _result(due: int, end: int, ok: bool = True) -> StreamResult:
    if not ok:
        return StreamResult(sent_ns=due, scheduled_ns=due, done_ns=end, http_status=500,
                            error=RequestError(kind="http_status", message="HTTP 500", http_status=500))
    first = due + (end - due) // 2
    chunks = [first, first + (end - first) // 2, end]
    return StreamResult(sent_ns=due, scheduled_ns=due, first_event_ns=first, done_ns=end, chunk_ns=chunks,
                        chunk_chars=[4] * 3, chunk_kind="ccc", content="word " * 3, finish_reason="length",
                        usage={"completion_tokens": 3, "prompt_tokens": 16}, http_status=200)


def _run(tmp: Path, windows: Sequence[tuple[float, Sequence[Req]]], *, slo: SloTargets | None = None,
         arrival: str = "constant", burstiness: float = 1.0) -> RunReader:
    d = tmp / "run"
    w = RunWriter(d, RunHeader(run_id="steady", created_at="2026-01-01T00:00:00+00:00", rigbench_version="0",
                               plan={"suites": {"load": {"slo_attainment": 0.99}}}))
    for k, (rate, reqs) in enumerate(windows):
        zero = ZERO * (k + 1)
        for i, r in enumerate(reqs):
            due, end = zero + round(r[0] * S), zero + round(r[1] * S)
            w.append(LoadRequest(unit_id=f"load/r{k}/i{i}", window=f"r{k}", index=i, input_tokens_target=16,
                                 output_tokens_target=3, input_tokens_measured=16,
                                 result=_result(due, end, r[2] if len(r) > 2 else True)))  # type: ignore[misc]
        w.append(LoadWindow(unit_id=f"load/r{k}", window=f"r{k}", mode="rate", arrival=arrival,  # type: ignore[arg-type]
                            burstiness=burstiness, offered_rate_rps=rate, max_concurrency=None, requests=len(reqs),
                            failed=0, started_ns=zero, ended_ns=zero + round(max(r[1] for r in reqs) * S), slo=slo))
    w.finish("complete")
    return RunReader(d)


def _unlimited(rate: float, n: int, service_s: float) -> list[Req]:
    """A server with a slot for every request: each ends `service_s` after it is due."""
    return [(i / rate, i / rate + service_s) for i in range(n)]


def _fifo(rate: float, n: int, service_s: float) -> list[Req]:
    """One request at a time, in arrival order: a server whose capacity is 1 / service_s."""
    out: list[Req] = []
    free = 0.0
    for i in range(n):
        due = i / rate
        free = max(free, due) + service_s
        out.append((due, free))
    return out


def _only(reader: RunReader):  # type: ignore[no-untyped-def]
    s = summarize_load(reader)
    assert s is not None
    return s, s.windows[0]


# -- the steady interval ----------------------------------------------------------------------------------------


def test_a_rate_below_capacity_sustains_it_once_ramp_and_drain_are_left_out(tmp_path: Path) -> None:
    """20 req/s for 5 s against a server that takes 0.5 s a request: counted over the whole window (ramp and
    drain in it, as the sweep did) it read 18.3 req/s; over the steady interval it is the 20 offered."""
    _, w = _only(_run(tmp_path, [(20.0, _unlimited(20.0, 100, 0.5))]))
    assert w.steady is not None and w.steady.state == "steady", w.steady
    assert w.steady.warmup_s == pytest.approx(0.5)  # the first requests' return time (over 10% of 4.95 s)
    assert w.throughput_rps == pytest.approx(20.0, rel=0.02)
    assert w.throughput_window_rps < 0.93 * 20.0  # what the whole window says: ramp and drain in it
    assert w.measured_over == "steady interval"


def test_a_rate_over_capacity_is_not_sustained_and_its_throughput_is_the_capacity(tmp_path: Path) -> None:
    """A server that serves 10 req/s, offered 20: the requests in flight grow by ~10 a second, so the rate is
    'not sustained' and what the window measures is the server's capacity. Control: offered 8, it keeps up."""
    _, w = _only(_run(tmp_path / "over", [(20.0, _fifo(20.0, 100, 0.1))]))
    assert w.steady is not None and w.steady.state == "not sustained"
    assert w.throughput_rps == pytest.approx(10.0, rel=0.05)
    assert w.steady.note is not None and "the queue grows" in w.steady.note and "in flight grew by" in w.steady.note
    _, ok = _only(_run(tmp_path / "under", [(8.0, _fifo(8.0, 100, 0.1))]))
    assert ok.steady is not None and ok.steady.state == "steady" and ok.throughput_rps == pytest.approx(8.0, rel=0.02)


def test_a_window_too_short_for_a_steady_interval_is_marked_and_keeps_its_whole_window_figures(tmp_path: Path) -> None:
    """32 requests at 79 req/s (0.4 s of arrivals) against 0.7 s requests, the issue's default sweep point: no
    steady interval exists; the window is 'too short', its figure is the whole window's, and a warning says how
    to measure it."""
    s, w = _only(_run(tmp_path, [(79.0, _unlimited(79.0, 32, 0.7))]))
    assert w.steady is not None and w.steady.state == "too short"
    assert w.throughput_rps == w.throughput_window_rps and w.measured_over == "whole window"
    assert any(x.startswith("load r0 (79 req/s offered): too short for steady state: the first requests took 0.7 s")
               and "--duration" in x for x in s.warnings), s.warnings


def test_a_window_too_short_whose_requests_queue_long_after_its_arrivals_is_not_sustained(tmp_path: Path) -> None:
    """The case of a starved server: 12 requests at 20 req/s against one that serves 2 a second. No steady
    interval exists, but its requests keep coming back for 5.45 s after the last arrival (0.55 s of arrivals,
    the first took 0.95 s): a queue, so the rate was not sustained, and it bounds the knee like any other."""
    _, w = _only(_run(tmp_path / "queue", [(20.0, _fifo(20.0, 12, 0.5))]))
    assert w.steady is not None and w.steady.state == "not sustained" and w.steady.measured_s == 0
    assert w.measured_over == "whole window" and w.steady.note is not None and "kept coming back" in w.steady.note


@pytest.mark.parametrize(("last_s", "state"), [(1.95, "too short"), (2.05, "not sustained")])
def test_a_short_windows_drain_is_a_queue_past_twice_the_first_requests_return(tmp_path: Path, last_s: float,
                                                                               state: str) -> None:
    reqs = [(i / 20.0, i / 20.0 + 1.0) for i in range(11)] + [(11 / 20.0, 11 / 20.0 + last_s)]  # ramp: 1.0 s
    _, w = _only(_run(tmp_path, [(20.0, reqs)]))
    assert w.steady is not None and w.steady.ramp_s == pytest.approx(1.0) and w.steady.state == state


@pytest.mark.parametrize(("n", "state"), [(12, "steady"), (11, "too short")])
def test_a_steady_interval_needs_enough_arrivals(tmp_path: Path, n: int, state: str) -> None:
    # constant arrivals: the ramp is the first 10% of the span, so requests 2..n-1 arrive after it
    arrived = sum(1 for i in range(n) if i > WARMUP_SHARE * (n - 1))
    assert arrived == (STEADY_MIN_REQUESTS if state == "steady" else STEADY_MIN_REQUESTS - 1)
    _, w = _only(_run(tmp_path, [(10.0, _unlimited(10.0, n, 0.001))]))
    assert w.steady is not None and w.steady.state == state


@pytest.mark.parametrize(("service_share", "state"), [(0.45, "steady"), (0.55, "too short")])
def test_a_steady_interval_needs_half_the_window_after_its_ramp(tmp_path: Path, service_share: float,
                                                               state: str) -> None:
    n, rate = 101, 20.0
    span = (n - 1) / rate
    _, w = _only(_run(tmp_path, [(rate, _unlimited(rate, n, service_share * span))]))
    assert w.steady is not None and w.steady.state == state


@pytest.mark.parametrize(("stuck", "state"), [(46, "steady"), (47, "not sustained")])
def test_the_queue_grew_when_the_backlog_passes_its_share_of_the_arrivals(tmp_path: Path, stuck: int,
                                                                          state: str) -> None:
    """1,001 requests at 100/s, served in 1 ms, but the last `stuck` end only after the last arrival: 900 arrive
    in the steady interval (1 s to 10 s), so 5% of them (45) is the most the in-flight count may grow by."""
    reqs = _unlimited(100.0, 1001, 0.001)
    reqs = [*reqs[:-stuck], *((due, 11.0) for due, _ in reqs[-stuck:])]
    _, w = _only(_run(tmp_path, [(100.0, reqs)]))
    assert w.steady is not None and w.steady.arrived == 900 and w.steady.backlog_limit == BACKLOG_SHARE * 900
    assert w.steady.backlog_growth == stuck - 1  # request 100, due at 1.0 s (the ramp), ended inside it
    assert w.steady.state == state


@pytest.mark.parametrize(("stuck", "arrival", "state"), [(9, "constant", "steady"), (10, "constant", "not sustained"),
                                                         (10, "gamma", "steady")])
def test_a_small_window_allows_the_in_flight_counts_chance_variation(tmp_path: Path, stuck: int, arrival: str,
                                                                     state: str) -> None:
    """100 requests at 10/s that take 0.5 s: about 5 in flight, so chance alone moves the count by up to
    3 x sqrt(2 x 10.1 x 0.5 + 1) = 9.995 between the interval's two ends (90 arrivals in 8.91 s); bursty arrivals
    (gamma shape 0.25) by twice that. `stuck` requests in mid-window never end within it."""
    reqs = _unlimited(10.0, 100, 0.5)
    reqs = [(due, 20.0) if 40 <= i < 40 + stuck else (due, end) for i, (due, end) in enumerate(reqs)]
    _, w = _only(_run(tmp_path, [(10.0, reqs)], arrival=arrival, burstiness=0.25 if arrival == "gamma" else 1.0))
    assert w.steady is not None and w.steady.backlog_growth == stuck
    assert w.steady.state == state, w.steady


# -- the knee and the sustained rate as bounds, in every format ---------------------------------------------------


def _formats(reader: RunReader) -> dict[str, str]:
    a = analyze_run(reader)
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render_terminal(a, console)
    return {"terminal": " ".join(console.file.getvalue().split()),  # type: ignore[attr-defined]
            "markdown": " ".join(render_markdown(a).split()),
            "html": " ".join(html.unescape(render_html(["run"], [a])).split())}


def test_a_sweep_where_every_rate_met_the_slo_reports_a_lower_bound_not_a_knee(tmp_path: Path) -> None:
    slo = SloTargets(ttft_s=1.0)
    reader = _run(tmp_path, [(r, _unlimited(r, 60, 0.2)) for r in (10.0, 20.0, 30.0)], slo=slo)
    s = summarize_load(reader)
    assert s is not None and s.knee is not None
    assert (s.knee.low_rps, s.knee.high_rps, s.knee_rps) == (30.0, None, None)
    said = "Knee: ≥ 30 req/s: no tested rate missed the SLO"
    for medium, text in _formats(reader).items():
        assert said in text, medium
        assert "(knee)" not in text and "Knee: 30" not in text, medium
    data = json.loads(render_json(analyze_run(reader)))["sections"]["load"]
    assert data["knee"]["low_rps"] == 30.0 and data["knee"]["high_rps"] is None
    assert data["capacity"]["low_rps"] == 30.0 and data["capacity"]["high_rps"] is None


def test_a_knee_between_two_rates_and_a_rate_the_server_could_not_sustain(tmp_path: Path) -> None:
    """One FIFO server of 10 req/s capacity: 4 and 8 req/s are sustained and meet a 1 s TTFT; 16 is not
    sustained (its queue grows), so it bounds both the knee and the sustained rate from above, though half of
    its window's requests still met the target (a longer window would see fewer)."""
    slo = SloTargets(ttft_s=1.0)
    reader = _run(tmp_path, [(r, _fifo(r, 80, 0.1)) for r in (4.0, 8.0, 16.0)], slo=slo)
    s = summarize_load(reader)
    assert s is not None and s.knee is not None and s.capacity is not None
    assert (s.knee.low_rps, s.knee.high_rps, s.knee_rps) == (8.0, 16.0, 8.0)
    assert (s.capacity.low_rps, s.capacity.high_rps) == (8.0, 16.0)
    top = s.windows[-1]
    assert top.steady is not None and top.steady.state == "not sustained"
    assert top.slo is not None and top.slo.fraction > 0  # some of its own requests did meet the target
    for medium, text in _formats(reader).items():
        assert "Knee: between 8 and 16 req/s" in text, medium
        assert "Sustained: between 8 and 16 req/s: 8 was sustained, 16 was not (the queue grew)" in text, medium
        assert "not sustained" in text, medium
    data = json.loads(render_json(analyze_run(reader)))["sections"]["load"]
    assert (data["knee"]["low_rps"], data["knee"]["high_rps"]) == (8.0, 16.0)
    assert data["windows"][2]["steady"]["state"] == "not sustained"
    # a target lenient enough that every request of the short overloaded window met it: the rate still cannot
    # be sustained (a longer window's queue would pass any target), so it still bounds the knee
    lenient = summarize_load(_run(tmp_path / "lenient", [(r, _fifo(r, 80, 0.1)) for r in (4.0, 8.0, 16.0)],
                                  slo=SloTargets(ttft_s=5.0)))
    assert lenient is not None and lenient.windows[-1].slo is not None and lenient.windows[-1].slo.fraction == 1.0
    assert lenient.knee is not None and (lenient.knee.low_rps, lenient.knee.high_rps) == (8.0, 16.0)


def test_a_sweep_where_no_rate_met_the_slo_reports_an_upper_bound(tmp_path: Path) -> None:
    slo = SloTargets(ttft_s=0.01)  # every request takes 0.2 s
    reader = _run(tmp_path, [(r, _unlimited(r, 60, 0.2)) for r in (10.0, 20.0)], slo=slo)
    s = summarize_load(reader)
    assert s is not None and s.knee is not None and (s.knee.low_rps, s.knee.high_rps) == (None, 10.0)
    for medium, text in _formats(reader).items():
        assert "Knee: < 10 req/s: every tested rate missed the SLO" in text, medium


def test_a_rate_that_missed_below_one_that_met_is_named_not_hidden_in_the_bound(tmp_path: Path) -> None:
    """A curve that is not monotone (chance, a disturbance): 10 and 30 req/s met the SLO, 20 and 40 missed it.
    The knee is bounded by the highest rate that met it and the lowest above that missed (30 and 40), and
    20, which missed below it, is named with the remedy. Control: a monotone curve names nothing."""
    slo = SloTargets(ttft_s=0.5)  # a request of 0.2 s has a 0.1 s TTFT, one of 2 s a 1 s TTFT

    def met(rate: float) -> list[Req]:
        return _unlimited(rate, round(6 * rate), 0.2)

    def missed(rate: float) -> list[Req]:
        return _unlimited(rate, round(10 * rate), 2.0)  # 10 s of arrivals: a steady interval after the 2 s ramp

    reader = _run(tmp_path, [(10.0, met(10.0)), (20.0, missed(20.0)), (30.0, met(30.0)), (40.0, missed(40.0))],
                  slo=slo)
    s = summarize_load(reader)
    assert s is not None and s.knee is not None
    assert all(w.steady is not None and w.steady.state == "steady" for w in s.windows), [w.steady for w in s.windows]
    assert (s.knee.low_rps, s.knee.high_rps, s.knee.out_of_order) == (30.0, 40.0, [20.0])
    said = [w for w in s.warnings if "not monotone" in w]
    assert said == ["the SLO was missed at 20 req/s, below 30 req/s where it was met: the curve is not monotone "
                    "(chance, or a disturbance); measure those rates again, longer (--duration)"], s.warnings
    monotone = summarize_load(_run(tmp_path / "monotone", [(10.0, met(10.0)), (20.0, met(20.0)),
                                                           (40.0, missed(40.0))], slo=slo))
    assert monotone is not None and monotone.knee is not None
    assert (monotone.knee.low_rps, monotone.knee.high_rps, monotone.knee.out_of_order) == (20.0, 40.0, [])
    assert not [w for w in monotone.warnings if "not monotone" in w], monotone.warnings


def test_a_window_too_short_is_left_out_of_the_knee_and_out_of_the_curves(tmp_path: Path) -> None:
    """Two steady rates that met the SLO and a third too short to judge, which failed it: the knee is bounded
    by the steady ones only (the short window does not cap it), and its point is not drawn on the curves."""
    slo = SloTargets(ttft_s=0.3)
    short = [(i / 40.0, i / 40.0 + 0.9) for i in range(8)]  # 8 requests, each 0.9 s: no steady interval
    reader = _run(tmp_path, [(10.0, _unlimited(10.0, 60, 0.2)), (20.0, _unlimited(20.0, 60, 0.2)), (40.0, short)],
                  slo=slo)
    s = summarize_load(reader)
    assert s is not None and s.knee is not None and (s.knee.low_rps, s.knee.high_rps) == (20.0, None)
    assert any(w.startswith("1 of 3 rates left out of the knee and the sustained rate (40 req/s)") for w in s.warnings)
    page = render_html(["run"], [analyze_run(reader)])
    plot = page.split("<h3>Goodput by offered rate</h3>")[1].split("<h3>")[0]
    assert "knee ≥ 20 req/s" in plot


# -- end to end, against the emulator given a capacity -----------------------------------------------------------

# 0.5 s a request (200 ms to the first token, 10 more at 30 ms), 40 slots: a capacity of about 80 req/s
CAPPED = EmulatorScript(ttft=Delay(mean_ms=200), itl=Delay(mean_ms=30), output_tokens=11, slots=40)
ARGS = ["--no-sanity", "--allow-untrusted", "--allow-busy-host", "--output-tokens", "11", "--input-tokens", "16"]


def rigbench(*args: str) -> Result:
    res = invoke(*args)
    assert res.traceback is None, res.traceback
    assert res.code == 0, res.stdout[-3000:] + res.stderr
    return res


def _load(out: Path):  # type: ignore[no-untyped-def]
    (d,) = [p for p in out.iterdir() if p.is_dir()]
    s = summarize_load(RunReader(d))
    assert s is not None
    return s


def test_a_sweep_point_sustains_what_the_same_rate_sustains_alone(tmp_path: Path) -> None:
    """The issue's case: a sweep point read a fraction of what `--rate` sustained at the same offer. Here both
    send the same (constant) schedule; each, ramp and drain left out, completes what arrived in its steady
    interval, and the two agree within a few percent. A sweep whose every rate met a
    lenient SLO reports a lower bound, not a knee."""
    with EmulatorProcess(CAPPED) as emu:
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--sweep", "--sweep-points", "2", "--duration", "3",
                       "--arrival", "constant", "--slo", "ttft=5s", "--out", str(tmp_path / "sweep"))
        sweep = _load(tmp_path / "sweep")
        point = sweep.rates[0]
        alone = rigbench("run", "--endpoint", emu.url, *ARGS, "--rate", repr(point.offered_rate_rps), "--duration",
                         "3", "--arrival", "constant", "--out", str(tmp_path / "alone"))
    one = _load(tmp_path / "alone").windows[0]
    for w in (point, one):
        assert w.steady is not None and w.steady.state == "steady", w.steady
        arriving = w.steady.arrived / w.steady.measured_s
        assert w.throughput_rps == pytest.approx(arriving, rel=0.05), (w.window, w.throughput_rps, arriving)
        assert w.throughput_window_rps < 0.95 * arriving  # the whole window, ramp and drain in it: what was shown
    assert point.throughput_rps == pytest.approx(one.throughput_rps, rel=0.04)
    assert sweep.knee is not None and sweep.knee.high_rps is None and sweep.knee_rps is None
    flat = " ".join(res.stdout.split())
    assert re.search(r"Knee: ≥ [0-9.]+ req/s: no tested rate missed the SLO", flat), flat[-3000:]
    assert "steady" in alone.stdout


def test_a_rate_over_the_servers_capacity_is_found_and_bounds_the_knee(tmp_path: Path) -> None:
    with EmulatorProcess(CAPPED) as emu:
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--rate", "40,130", "--arrival", "constant",
                       "--duration", "2.5", "--slo", "ttft=1s", "--out", str(tmp_path))
    s = _load(tmp_path)
    low, high = s.rates
    assert low.steady is not None and low.steady.state == "steady"
    assert high.steady is not None and high.steady.state == "not sustained", high.steady
    assert high.throughput_rps < 0.8 * 130  # the capacity (about 80), not the offer
    assert s.capacity is not None and (s.capacity.low_rps, s.capacity.high_rps) == (40.0, 130.0)
    assert s.knee is not None and (s.knee.low_rps, s.knee.high_rps) == (40.0, 130.0)
    flat = " ".join(res.stdout.split())
    assert "Knee: between 40 and 130 req/s" in flat and "not sustained" in flat
