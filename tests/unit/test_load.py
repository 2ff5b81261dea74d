"""The load suite (rate mode): open-loop schedules, response vs service time, goodput and the knee,
schedule adherence, bad input, and the per-request export (issue 20)."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rigbench.analysis import analyze_run, parse_slo, summarize_load
from rigbench.analysis._goodput import rate_bound
from rigbench.records import HostConditions, LoadRequest, LoadWindow, RequestError, SloTargets, StreamResult
from rigbench.store import RunHeader, RunReader, RunWriter
from rigbench.suites.load import arrival_offsets_s, sweep_rates
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault
from tests.children import die_with_pytest
from tests.unit.cli_inproc import Result, invoke

ARGS = ["--no-sanity", "--allow-untrusted"]


def rigbench(*args: str) -> Result:
    res = invoke(*args)
    assert res.traceback is None, res.traceback
    return res


def _only_run(out: Path) -> Path:
    (d,) = [p for p in out.iterdir() if p.is_dir()]
    return d


# -- schedules ------------------------------------------------------------------------------------


def test_constant_schedule_is_evenly_spaced_and_bounded_by_count_or_duration() -> None:
    assert arrival_offsets_s(4.0, "constant", 1.0, seed=0, count=5) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert arrival_offsets_s(4.0, "constant", 1.0, seed=0, duration_s=1.0) == [0.0, 0.25, 0.5, 0.75]


def test_poisson_and_gamma_schedules_have_the_offered_mean_rate_and_their_burstiness() -> None:
    def gaps(arrival: str, shape: float) -> np.ndarray:
        return np.diff(arrival_offsets_s(100.0, arrival, shape, seed=3, count=20_000))

    for arrival, shape, cv in (("poisson", 1.0, 1.0), ("gamma", 0.25, 2.0), ("gamma", 4.0, 0.5)):
        g = gaps(arrival, shape)
        assert abs(1 / g.mean() - 100.0) < 3.0, (arrival, shape, 1 / g.mean())
        assert abs(g.std() / g.mean() - cv) < 0.1 * cv, (arrival, shape, g.std() / g.mean())
    # the same seed draws the same schedule (a resumed window sends it again); a duration bound keeps
    # every arrival before the end
    assert arrival_offsets_s(5.0, "poisson", 1.0, seed=9, count=50) == arrival_offsets_s(5.0, "poisson", 1.0, seed=9,
                                                                                           count=50)
    timed = arrival_offsets_s(50.0, "poisson", 1.0, seed=9, duration_s=10.0)
    assert max(timed) < 10.0 and 400 < len(timed) < 600


def test_sweep_rates_run_from_low_to_just_under_saturation() -> None:
    rates = sweep_rates(100.0, 3)
    assert rates == pytest.approx([95 / 3, 2 * 95 / 3, 95.0])


# -- SLO, goodput and knee ------------------------------------------------------------------------


def test_slo_text_reads_metrics_and_units_and_refuses_the_rest() -> None:
    slo = parse_slo("ttft=500ms,itl=50ms,e2e=10s")
    assert slo == SloTargets(ttft_s=0.5, itl_s=0.05, e2e_s=10.0)
    assert parse_slo("itl=800us").itl_s == pytest.approx(8e-4)
    with pytest.raises(ValueError, match=r"unknown metric 'tpot' in 'tpot=5ms'; the metrics are ttft, itl, e2e"):
        parse_slo("ttft=1s,tpot=5ms")
    with pytest.raises(ValueError, match=r"unknown unit 'min' in 'e2e=2min'; give s, ms or us"):
        parse_slo("e2e=2min")
    with pytest.raises(ValueError, match="cannot read 'ttft'"):
        parse_slo("ttft")
    # a target no request can meet, or none can miss, is refused: zero, and a figure too large to be a time
    with pytest.raises(ValueError, match=r"'ttft=0ms': a target must be a positive time"):
        parse_slo("ttft=0ms")
    with pytest.raises(ValueError, match=r"'e2e=1e400s': a target must be a positive time"):
        parse_slo("e2e=1e400s")
    with pytest.raises(ValueError, match=r"ttft is given twice in 'ttft=1s,ttft=2s'"):
        parse_slo("ttft=1s,ttft=2s")
    assert parse_slo("ttft=1us").ttft_s == pytest.approx(1e-6)  # the smallest positive target is one


def _result(sent: int, scheduled: int, ttft_ms: float, n_tokens: int = 8, itl_ms: float = 10.0,
            error: bool = False) -> StreamResult:
    if error:
        return StreamResult(sent_ns=sent, scheduled_ns=scheduled, done_ns=sent + 1_000_000, http_status=500,
                            error=RequestError(kind="http_status", message="HTTP 500", http_status=500))
    first = sent + int(ttft_ms * 1e6)
    chunks = [first + int(i * itl_ms * 1e6) for i in range(n_tokens)]
    return StreamResult(sent_ns=sent, scheduled_ns=scheduled, first_event_ns=first, done_ns=chunks[-1],
                        chunk_ns=chunks, chunk_chars=[4] * n_tokens, chunk_kind="c" * n_tokens,
                        content="word " * n_tokens, finish_reason="length",
                        usage={"completion_tokens": n_tokens, "prompt_tokens": 16}, http_status=200)


def _synthetic_run(tmp: Path, windows: list[tuple[float, list[tuple[float, float]]]],
                   slo: SloTargets | None, attainment: float = 0.99,
                   other_cpu_s: float | None = None) -> RunReader:
    """A run whose windows are (offered rate, [(late_ms, ttft_ms) per request]); with `other_cpu_s`, each
    window has a host record of a 2-core, 2-second window in which other processes used that much CPU."""
    d = tmp / "run"
    w = RunWriter(d, RunHeader(run_id="t", created_at="2026-01-01T00:00:00+00:00", rigbench_version="0",
                               plan={"suites": {"load": {"slo_attainment": attainment}}}))
    for k, (rate, reqs) in enumerate(windows):
        zero = 10_000_000_000 * (k + 1)
        gap = int(1e9 / rate)
        for i, (late_ms, ttft_ms) in enumerate(reqs):
            due = zero + i * gap
            res = _result(due + int(late_ms * 1e6), due, ttft_ms)
            w.append(LoadRequest(unit_id=f"load/r{k}/i{i}", window=f"r{k}", index=i, input_tokens_target=16,
                                 output_tokens_target=8, input_tokens_measured=16, result=res))
        end = max(zero + i * gap + 10**9 for i in range(len(reqs)))
        if other_cpu_s is not None:
            w.append(HostConditions(unit_id=f"host/load/r{k}/rate{rate:g}", window=f"load/r{k} rate={rate:g}/s",
                                    scenario=f"load/r{k}", rate_rps=rate, started_ns=zero, ended_ns=zero + 2 * 10**9,
                                    engine="local", engine_pids=[42], cpus=[0, 1], busy_cpu_s=1.0 + other_cpu_s,
                                    engine_cpu_s=0.9, rigbench_cpu_s=0.1, steal_s=0.0))
        w.append(LoadWindow(unit_id=f"load/r{k}", window=f"r{k}", mode="rate", arrival="constant", burstiness=1.0,
                            offered_rate_rps=rate, max_concurrency=None, requests=len(reqs), failed=0,
                            started_ns=zero, ended_ns=end, slo=slo))
    w.finish("complete")
    return RunReader(d)


def test_goodput_counts_requests_meeting_every_target_from_the_intended_start(tmp_path: Path) -> None:
    slo = SloTargets(ttft_s=0.1)
    # rate 1: all fast; rate 2: 1 of 20 slow (in the steady interval); rate 3: fast service but sent 200 ms
    # late: the queueing a late client hides from service time still misses a response-time target
    fast, slow = (0.0, 20.0), (0.0, 300.0)
    late = (200.0, 20.0)
    mixed = [fast] * 9 + [slow] + [fast] * 10
    reader = _synthetic_run(tmp_path, [(1.0, [fast] * 20), (2.0, mixed), (3.0, [late] * 20)], slo, attainment=0.9)
    s = summarize_load(reader)
    assert s is not None
    by = {w.offered_rate_rps: w for w in s.windows}
    assert all(w.steady is not None and w.steady.state == "steady" for w in s.windows)
    # judged over the steady interval's arrivals: the first two (the ramp: 10% of the arrival span) left out
    assert by[1.0].slo is not None and by[1.0].slo.requests == 18 and by[1.0].slo.fraction == 1.0
    assert by[2.0].slo is not None and by[2.0].slo.met == 17 and by[2.0].slo.missed == {"ttft": 1}
    assert by[3.0].slo is not None and by[3.0].slo.met == 0
    # service TTFT (from the send) is 20 ms; response TTFT (from the intended start) is 220 ms
    assert by[3.0].ttft_s is not None and by[3.0].ttft_s.median == pytest.approx(0.02, abs=1e-6)
    assert by[3.0].ttft_response_s is not None and by[3.0].ttft_response_s.median == pytest.approx(0.22, abs=1e-6)
    # goodput: requests that met the SLO and ended in the steady interval, per second of it: at a sustained rate
    # where every request met it, the rate itself
    assert by[1.0].throughput_rps == pytest.approx(1.0, rel=0.07) and by[1.0].slo.goodput_rps == by[1.0].throughput_rps
    # the knee: the highest rate where >= 90% met (rate 2 at 17 of 18), bounded above by rate 3, where none met
    # it: its requests were each sent 200 ms late (CLIENT-BOUND, said), but at the scheduled rate, so the
    # server saw that rate and its users the wait
    assert s.knee is not None and (s.knee.low_rps, s.knee.high_rps) == (2.0, 3.0) and s.knee_rps == 2.0
    assert any(w.startswith("CLIENT-BOUND: load r2 (3 req/s offered)") for w in s.warnings)
    strict = summarize_load(_synthetic_run(tmp_path / "b", [(1.0, [fast] * 20), (2.0, mixed)], slo, attainment=0.99))
    assert strict is not None and strict.knee is not None and (strict.knee.low_rps, strict.knee.high_rps) == (1.0, 2.0)
    assert rate_bound([]) is None


def test_a_client_that_falls_behind_its_schedule_is_flagged_and_one_that_keeps_it_is_not(tmp_path: Path) -> None:
    behind = _synthetic_run(tmp_path / "behind", [(10.0, [(0.2, 20.0)] * 30 + [(40.0, 20.0)] * 3)], None)
    kept = _synthetic_run(tmp_path / "kept", [(10.0, [(0.2, 20.0)] * 33)], None)
    s_behind, s_kept = summarize_load(behind), summarize_load(kept)
    assert s_behind is not None and s_kept is not None
    assert not s_behind.windows[0].schedule_kept
    assert any("CLIENT-BOUND: load r0 (10 req/s offered): send lag p99" in w for w in s_behind.warnings)
    assert s_kept.windows[0].schedule_kept and s_kept.warnings == []


def test_late_sends_on_a_busy_host_name_the_host_not_the_client(tmp_path: Path) -> None:
    """Send lag during a window whose host record shows other processes on the cores is the host's doing:
    the warning says so (LATE SENDS) instead of blaming rigbench (CLIENT-BOUND); on a quiet host it stays
    CLIENT-BOUND."""
    late = [(0.2, 20.0)] * 30 + [(40.0, 20.0)] * 3
    busy = summarize_load(_synthetic_run(tmp_path / "busy", [(10.0, late)], None, other_cpu_s=1.8))
    quiet = summarize_load(_synthetic_run(tmp_path / "quiet", [(10.0, late)], None, other_cpu_s=0.02))
    assert busy is not None and quiet is not None
    [b] = busy.warnings
    assert b.startswith("LATE SENDS: load r0 (10 req/s offered): send lag p99") and "CLIENT-BOUND" not in b
    assert "The host was busy during this window (other processes used 0.90 of 2 cores" in b
    [q] = quiet.warnings
    assert q.startswith("CLIENT-BOUND: load r0 (10 req/s offered): send lag p99")


# -- end to end against the emulator ---------------------------------------------------------------

SLOW = EmulatorScript(ttft=Delay(mean_ms=300), itl=Delay(mean_ms=2), output_tokens=8)


def test_requests_go_out_on_schedule_whether_or_not_earlier_ones_finished(tmp_path: Path) -> None:
    """Open loop: 10 requests at 20 req/s against a server that takes 300 ms each are all sent within
    the half second of their schedule (a closed loop would take 3 s); with --max-concurrency 1 they
    queue, and the queueing shows in the response time, not hidden in the service time."""
    with EmulatorProcess(SLOW) as emu:
        open_out, capped_out = tmp_path / "open", tmp_path / "capped"
        common = ["run", "--endpoint", emu.url, *ARGS, "--rate", "20", "--arrival", "constant", "--requests", "10"]
        assert rigbench(*common, "--out", str(open_out)).code == 0
        assert rigbench(*common, "--max-concurrency", "1", "--out", str(capped_out)).code == 0
    open_run = RunReader(_only_run(open_out))
    sent = sorted(q.result.sent_ns for q in open_run.records("load_request", LoadRequest))
    assert len(sent) == 10 and (sent[-1] - sent[0]) / 1e9 < 0.45 + 0.25  # schedule span 0.45 s
    s = summarize_load(open_run)
    assert s is not None
    w = s.windows[0]
    assert w.failed == 0 and w.ttft_s is not None and w.ttft_response_s is not None
    assert w.ttft_response_s.median - w.ttft_s.median < 0.1  # kept the schedule: response ~ service

    capped = summarize_load(RunReader(_only_run(capped_out)))
    assert capped is not None
    c = capped.windows[0]
    # waiting for a slot is queueing, not client lag: the tenth request waited ~2.5 s for a slot, and its
    # send lag (counted from the slot) stays far below that even on a busy box
    assert c.slot_waits >= 8 and c.slot_wait_s is not None and c.slot_wait_s.max > 2.0
    assert c.send_lag_s is not None and c.send_lag_s.p99 is not None and c.send_lag_s.p99 < 0.5
    assert c.ttft_s is not None and c.ttft_response_s is not None
    assert c.ttft_s.median < 0.45  # each request, once sent, is served in ~300 ms...
    assert c.ttft_response_s.max > 2.0  # ...but the tenth waited ~2.5 s behind the others


def test_a_sweep_against_a_server_that_fails_every_request_stops_with_the_reason(tmp_path: Path) -> None:
    failing = EmulatorScript(faults=[Fault(kind="http_status", status=503, message="overloaded")])
    with EmulatorProcess(failing) as emu:
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--sweep", "--sweep-points", "3", "--requests", "4",
                       "--out", str(tmp_path))
    assert res.code != 0
    assert "the sweep stopped: every one of the 4 saturation requests failed (http_status: HTTP 503)" in res.stderr
    assert len(res.stderr.strip().splitlines()) <= 3, res.stderr
    header = json.loads((_only_run(tmp_path) / "run.json").read_text())
    assert header["status"] == "failed"


def test_a_busy_neighbour_untrusts_every_load_window_and_allow_busy_host_keeps_them(tmp_path: Path) -> None:
    """Each window of offered load (a --rate run; a sweep's saturation burst and each of its rates) records
    who used the host's CPU, and a busy one untrusts the run as a speed window does. The control, the same
    run with --allow-busy-host, stays trusted for the host and shows the finding."""
    script = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=2), output_tokens=200)  # ~0.4 s a request
    with EmulatorProcess(script) as emu:
        nb = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=die_with_pytest)
        os.sched_setaffinity(nb.pid, os.sched_getaffinity(0))
        try:
            time.sleep(0.2)
            rate = rigbench("run", "--endpoint", emu.url, "--no-sanity", "--rate", "10", "--arrival", "constant",
                            "--requests", "12", "--out", str(tmp_path / "rate"))
            rigbench("run", "--endpoint", emu.url, "--no-sanity", "--allow-busy-host", "--sweep",
                     "--sweep-points", "2", "--requests", "6", "--out", str(tmp_path / "sweep"))
        finally:
            nb.kill()
            nb.wait()
    run_dir = _only_run(tmp_path / "rate")
    reasons = json.loads((run_dir / "run.json").read_text())["trust"]["reasons"]
    busy = [r for r in reasons if r.startswith("host busy")]
    assert rate.code == 1 and len(busy) == 1, reasons
    assert "during load/r0 rate=10/s, other processes used" in busy[0] and "--allow-busy-host" in busy[0]
    [rec] = RunReader(run_dir).records("host_conditions", HostConditions)
    assert rec.unit_id == "host/load/r0/rate10" and rec.rate_rps == 10 and rec.engine == "local"
    # the window spans the load: 12 sends over 1.1 s, each served in ~0.4 s
    assert 1.2 < rec.wall_s < 10 and rec.other_cpu_s is not None and rec.other_cpu_s / rec.wall_s >= 0.5

    sweep_dir = _only_run(tmp_path / "sweep")
    recs = RunReader(sweep_dir).records("host_conditions", HostConditions)
    assert [r.scenario for r in recs] == ["load/saturation", "load/r0", "load/r1"]
    assert recs[0].window == "load/saturation c=6" and all(r.rate_rps for r in recs[1:])
    header = json.loads((sweep_dir / "run.json").read_text())
    assert not any(r.startswith("host busy") for r in header["trust"]["reasons"])
    shown = [w for w in analyze_run(RunReader(sweep_dir)).warnings if w.startswith("host busy")]
    assert len(shown) == 1 and "kept by --allow-busy-host" in shown[0] and "during load/saturation c=6" in shown[0]


def test_per_request_csv_and_jsonl_from_run_and_from_report(tmp_path: Path) -> None:
    fast = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=1), output_tokens=8)
    c1, j1, c2 = tmp_path / "run.csv", tmp_path / "run.jsonl", tmp_path / "report.csv"
    with EmulatorProcess(fast) as emu:
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--rate", "50", "--requests", "12", "--slo",
                       "ttft=2s,e2e=5s", "--out", str(tmp_path / "runs"), "--csv", str(c1), "--jsonl", str(j1))
    assert res.code == 0, res.stderr
    rows = list(csv.DictReader(c1.open()))
    assert len(rows) == 12 and {r["suite"] for r in rows} == {"load"}
    for r in rows:
        intended, sent, first, end = (float(r[k]) for k in ("intended_start_at_s", "sent_at_s", "first_token_at_s",
                                                            "end_at_s"))
        assert intended <= sent <= first <= end
        assert math.isclose(float(r["ttft_response_s"]), first - intended, abs_tol=1e-6)
        assert r["output_tokens"] == "8" and r["error_kind"] == "" and r["slo_met"] == "True"
    lines = [json.loads(x) for x in j1.read_text().splitlines()]
    assert [x["unit_id"] for x in lines] == [r["unit_id"] for r in rows]
    assert rigbench("report", str(_only_run(tmp_path / "runs")), "--csv", str(c2)).code == 0
    assert c2.read_text() == c1.read_text()


@pytest.mark.parametrize(("args", "message"), [
    (["--rate", "0"], "--rate: must be a positive finite number; got 0.0"),
    (["--rate", "-3"], "--rate: must be a positive finite number; got -3.0"),
    (["--rate", "nan"], "--rate: must be a positive finite number; got nan"),
    (["--rate", "5,10,5"], "--rate: lists a rate twice: '5,10,5'; each rate is one window"),
    (["--rate", "5,,10"], "--rate: takes a rate or a comma-separated list of rates, e.g. 5 or 5,10,20; got '5,,10'"),
    (["--rate", "5,-1"], "--rate: must be a positive finite number; got -1.0"),
    (["--rate", "5,10", "--sessions", "2"], "--sessions N starts N sessions at --rate R (one window): give one --rate"),
    (["--rate", "5", "--slo", "ttft=1s,tpot=5ms"], "--slo: unknown metric 'tpot' in 'tpot=5ms'"),
    (["--rate", "5", "--slo", "ttft=5parsecs"], "--slo: unknown unit 'parsecs' in 'ttft=5parsecs'"),
    (["--rate", "5", "--burstiness", "0.5"], "shapes gamma arrivals; add --arrival gamma"),
    (["--rate", "5", "--arrival", "bursty"], "--arrival: Input should be 'constant', 'poisson' or 'gamma'"),
    (["--rate", "5", "--sweep"], "give --sweep or --rate, not both"),
    (["--rate", "5", "--duration", "10", "--requests", "4"], "by --duration or by --requests, not both"),
    (["--rate", "5", "--max-concurrency", "4", "--ray", "local"], "with --clients the actors share no count"),
    (["--rate", "5", "--sessions", "2", "--clients", "2", "--ray", "local"], "--sessions with --clients is not built"),
    (["--suite", "load"], "the load suite needs a rate, a sweep or a trace"),
])
def test_bad_load_options_are_one_clear_line_and_exit_2_before_anything_is_sent(args: list[str], message: str,
                                                                                tmp_path: Path) -> None:
    # nothing listens on port 9: had anything been sent, the error would be about reaching it
    res = rigbench("run", "--endpoint", "http://127.0.0.1:9/v1", *ARGS, *args, "--out", str(tmp_path))
    assert res.code == 2, (args, res.stdout, res.stderr)
    assert message in res.stderr, (args, res.stderr)
    assert "cannot reach" not in res.stderr and not any(tmp_path.iterdir())


def test_html_report_draws_rate_latency_curves_and_goodput_with_the_knee(tmp_path: Path) -> None:
    from rigbench.analysis import analyze_run
    from rigbench.report import render_html

    fast, slow = (0.0, 20.0), (0.0, 300.0)
    reader = _synthetic_run(tmp_path, [(1.0, [fast] * 20), (2.0, [fast] * 9 + [slow] + [fast] * 10),
                                       (4.0, [slow] * 20)], SloTargets(ttft_s=0.1), attainment=0.9)
    page = render_html(["sweep"], [analyze_run(reader)])
    curves = page.split("<h3>Latency by offered rate</h3>")[1].split("<h3>")[0]
    goodput = page.split("<h3>Goodput by offered rate</h3>")[1].split("<h3>")[0]
    assert curves.startswith('<div class="plot"><svg') and "p99" in curves
    assert goodput.startswith('<div class="plot"><svg') and "knee 2 req/s" in goodput
    assert "r1 (knee)" in page and "Load: goodput under the SLO (TTFT ≤ 100 ms)" in page
    # one rate: no curve to draw, so the plot is left out (the report leaves out what has nothing to show)
    one = _synthetic_run(tmp_path / "one", [(1.0, [fast] * 10)], SloTargets(ttft_s=0.1))
    page = render_html(["one"], [analyze_run(one)])
    assert "<h3>Latency by offered rate</h3>" not in page and "<h3>Goodput by offered rate</h3>" not in page


def test_compare_puts_two_sweeps_side_by_side_at_the_baselines_offered_rates(tmp_path: Path) -> None:
    from rigbench.analysis import compare_load

    fast, slow = (0.0, 20.0), (0.0, 300.0)
    slo = SloTargets(ttft_s=0.1)
    a = summarize_load(_synthetic_run(tmp_path / "a", [(1.0, [fast] * 20), (2.0, [fast] * 20), (4.0, [fast] * 20)],
                                      slo, attainment=0.9))
    b = summarize_load(_synthetic_run(tmp_path / "b", [(1.0, [slow] * 20), (3.0, [fast] * 20)], slo, attainment=0.9))
    assert a is not None and b is not None
    c = compare_load(a, b)
    by = {r.offered_rate_rps: r for r in c.rows}
    assert [by[r].basis for r in (1.0, 2.0, 4.0)] == ["measured", "interpolated", "out of range"]
    assert by[1.0].ttft_test is not None and by[1.0].ttft_test.verdict == "differs"  # 20 ms against 300 ms
    assert by[2.0].ttft_test is None and by[2.0].other_ttft_p50_s == pytest.approx((0.3 + 0.02) / 2)
    assert by[4.0].other_throughput_rps is None
    # every rate of each met the SLO: lower bounds, not knees
    assert c.baseline_knee is not None and (c.baseline_knee.low_rps, c.baseline_knee.high_rps) == (4.0, None)
    assert c.other_knee is not None and (c.other_knee.low_rps, c.other_knee.high_rps) == (3.0, None)
    # from the command line: the same table, labelled
    res = rigbench("compare", str(tmp_path / "a" / "run"), str(tmp_path / "b" / "run"), "--allow-mismatch")
    assert res.code == 0, res.stderr
    assert "at equal offered rate" in res.stdout and "interpolated" in res.stdout and "out of range" in res.stdout


def test_resume_redoes_only_the_windows_that_did_not_finish(tmp_path: Path) -> None:
    """A sweep killed during its last rate: --resume keeps the saturation burst and the finished rates
    (their records byte for byte), sends the unfinished window again, and ends complete."""
    fast = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=1), output_tokens=8)
    with EmulatorProcess(fast) as emu:
        out = tmp_path / "runs"
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--sweep", "--sweep-points", "2", "--requests", "6",
                       "--out", str(out))
        assert res.code == 0, res.stderr
        run_dir = _only_run(out)
        rec = run_dir / "records.jsonl"
        lines = rec.read_text().splitlines(keepends=True)
        cut = next(i for i, ln in enumerate(lines) if '"load/r1/i' in ln)  # killed as r1's records were written
        kept = lines[:cut + 2]
        rec.write_text("".join(kept))
        head = json.loads((run_dir / "run.json").read_text())
        head.update(status="running", finished_at=None, source_data_id=None, trust=None)
        (run_dir / "run.json").write_text(json.dumps(head))
        before = {json.loads(ln)["unit_id"]: ln for ln in kept if '"load/saturation' in ln or '"load/r0' in ln}
        res = rigbench("run", "--resume", str(run_dir), "--allow-untrusted")
        assert res.code == 0, res.stderr
    after = rec.read_text().splitlines(keepends=True)
    assert after[:len(kept)] == kept  # appended, never rewritten
    new = [json.loads(ln) for ln in after[len(kept):]]
    assert not [r for r in new if r.get("unit_id", "").startswith(("load/saturation", "load/r0"))]
    assert len([r for r in new if r["kind"] == "load_request"]) == 6 and any(r["kind"] == "load_window" for r in new)
    s = summarize_load(RunReader(run_dir))
    assert s is not None and [w.requests for w in s.windows] == [6, 6, 6]
    assert all(before[u] in after for u in before)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"


def test_a_plan_file_takes_a_load_key_and_refuses_a_bad_one_naming_its_line(tmp_path: Path) -> None:
    from rigbench.plan import PlanError, load_plan, run_config_for
    from rigbench.suites.load import LoadSuite

    plan = tmp_path / "plan.yaml"
    body = ("name: sweep\nsuites: [load]\nload:\n  sweep: true\n  sweep_points: 3\n  slo: ttft=500ms,itl=50ms\n"
            "rigs:\n  - name: remote\n    endpoint: {base_url: 'http://127.0.0.1:9/v1'}\n")
    plan.write_text(body)
    lp = load_plan(plan)
    assert lp.plan.load.sweep and lp.plan.load.slo == SloTargets(ttft_s=0.5, itl_s=0.05)
    cfg = run_config_for(lp.plan, lp.rigs[0], tmp_path / "runs")
    assert [type(s) for s in cfg.suites] == [LoadSuite] and cfg.recorded()["suites"]["load"]["sweep_points"] == 3
    plan.write_text(body.replace("  sweep: true\n  sweep_points: 3\n", "  rate_rps: .nan\n"))
    with pytest.raises(PlanError, match=r"plan.yaml:4: load.rate_rps: .*must be a positive finite number"):
        load_plan(plan)
    plan.write_text(body.replace("  sweep: true\n  sweep_points: 3\n", "  rate_rps: [2, 8]\n"))
    assert load_plan(plan).plan.load.rates == [2.0, 8.0]  # a list of rates: one window each
    plan.write_text(body.replace("  sweep: true\n  sweep_points: 3\n", "  rate_rps: true\n"))
    with pytest.raises(PlanError, match=r"plan.yaml:4: load.rate_rps: .*takes a number; got True"):
        load_plan(plan)
    plan.write_text(body.replace("ttft=500ms,itl=50ms", "ttft=500ms,queue=5s"))
    with pytest.raises(PlanError, match=r"plan.yaml:6: load.slo: .*unknown metric 'queue'"):
        load_plan(plan)
    # the load flags belong to single runs: on a plan they are refused, pointing at the key
    res = rigbench("run", str(plan), "--rate", "5")
    assert res.code == 2 and "write it in the plan's `load:` key" in res.stderr
