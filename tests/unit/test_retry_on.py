"""Retries of refused requests (`--retry-on 429,503`; issue 22, item 7).

Adversary: a rate-limited or overloaded server answering HTTP 429/503 with `Retry-After`, honest
(1 s, an HTTP-date) or hostile (10^12 s, negative, NaN, a header of megabytes). Retries must wait what
is asked within a bounded budget, be recorded as retries (attempt, status, wait asked and taken), and
never count as latency; a wait beyond the budget ends the retries at once, without sleeping.
Control: without --retry-on a 429 is the rejected record it always was, with no wait.
"""

from __future__ import annotations

import email.utils
import json
import time
from pathlib import Path

import pytest

from rigbench.analysis import analyze_run, load_timing, request_rows
from rigbench.client import AiohttpTransport, ChatClient, RetryPolicy, StampedTransport, StreamTransport
from rigbench.client._retry import parse_retry_after, parse_statuses
from rigbench.records import LoadRequest, SpeedRequest
from rigbench.report import render_html, render_markdown
from rigbench.store import RunReader
from rigbench.testing import Delay, Emulator, EmulatorProcess, EmulatorScript, Fault
from tests.unit.cli_inproc import invoke

FAST = dict(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=8)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
ARGS = ["--no-sanity", "--allow-untrusted", "--scenarios", "chat_short", "--warmup", "0", "--repetitions", "1"]


def _refusing(times: int | None, retry_after: str | None, status: int = 429) -> EmulatorScript:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return EmulatorScript(**FAST, faults=[Fault(kind="http_status", status=status, message="slow down", until=times,
                                                headers=headers)])


# -- parsing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "seconds"), [
    ("1", 1.0), (" 2 ", 2.0), ("1.5", 1.5), ("0", 0.0), ("1000000000000", 1e12),
    (None, None), ("", None), ("-5", None), ("NaN", None), ("nan", None), ("inf", None), ("1e9", None),
    ("soon", None), ("9" * 100, None), ("Wed, 99 Foo 2026 25:61:00 GMT", None), ("\x1b[2J", None),
])
def test_retry_after_is_read_as_seconds_or_refused(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value) == seconds


def test_retry_after_as_an_http_date() -> None:
    now = 1_800_000_000.0
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30)
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0  # past: no wait


@pytest.mark.parametrize("text", ["200", "abc", "", " ", "429,,503", "429,", "600", "399", "-429", "4e2"])
def test_only_http_error_statuses_are_retried(text: str) -> None:
    with pytest.raises(ValueError):
        parse_statuses(text)
    assert parse_statuses(" 429, 503,429") == [429, 503]


# -- the client -----------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", [StampedTransport, AiohttpTransport])
async def test_two_429s_with_retry_after_1_then_success(transport: type[StreamTransport]) -> None:
    async with Emulator(_refusing(2, "1")) as emu, ChatClient(emu.url, transport=transport()) as c:
        c.configure(retries=RetryPolicy(statuses=[429, 503]))
        t0 = time.perf_counter_ns()
        r = await c.stream_chat(BODY, scheduled_ns=t0)
    assert r.ok, r.error
    assert [(a.attempt, a.http_status, a.retry_after, a.wait_asked_s) for a in r.retries] == [
        (1, 429, "1", 1.0), (2, 429, "1", 1.0)]
    assert all(0.95 <= a.wait_s < 1.5 for a in r.retries), [a.wait_s for a in r.retries]
    # the latency is the answered attempt's: the two seconds of waiting are not in it
    assert r.done_ns is not None and (r.done_ns - r.sent_ns) / 1e9 < 0.9
    assert (r.sent_ns - t0) / 1e9 >= 1.9  # ...but they happened before its send
    assert r.retries[0].sent_ns < r.retries[1].sent_ns < r.sent_ns


async def test_without_retry_on_a_429_is_the_rejected_record_at_once() -> None:
    async with Emulator(_refusing(2, "1")) as emu, ChatClient(emu.url) as c:
        t0 = time.monotonic()
        r = await c.stream_chat(BODY)
    assert time.monotonic() - t0 < 0.9
    assert r.error is not None and r.error.kind == "http_status" and r.error.http_status == 429
    assert r.retries == [] and r.retry_stopped is None


async def test_a_non_streamed_exchange_follows_the_same_retry_policy(tmp_path: Path) -> None:
    """The agent suite's non-streamed exchanges (its probes send one beside each streamed one) are retried as
    streamed requests are, recorded the same way in the exchange's result, timed on the answered attempt.
    Control: without --retry-on the same refusal is the failed exchange it was, at once."""
    from rigbench.store import RunHeader, RunWriter
    from rigbench.suites.agent._exchange import send

    writer = RunWriter(tmp_path / "run", RunHeader(run_id="r", created_at="2026-01-01T00:00:00+00:00",
                                                  rigbench_version="0"))
    async with Emulator(_refusing(2, "1")) as emu, ChatClient(emu.url) as c:
        c.configure(retries=RetryPolicy(statuses=[429]))
        t0 = time.perf_counter_ns()
        ex = (await send(c, writer, BODY, streamed=False)).exchange
    r = ex.result
    assert not ex.streamed and r.ok and r.content, r.error
    assert [(a.attempt, a.http_status, a.retry_after, a.wait_asked_s) for a in r.retries] == [
        (1, 429, "1", 1.0), (2, 429, "1", 1.0)]
    assert all(0.95 <= a.wait_s < 1.5 for a in r.retries) and r.retry_stopped is None
    assert r.done_ns is not None and (r.done_ns - r.sent_ns) / 1e9 < 0.9  # the answered attempt's time...
    assert (r.sent_ns - t0) / 1e9 >= 1.9 and r.retries[0].sent_ns < r.retries[1].sent_ns < r.sent_ns  # ...after

    async with Emulator(_refusing(2, "1")) as emu, ChatClient(emu.url) as c:
        c.configure(retries=RetryPolicy(statuses=[429], max_retries=1))
        gave_up = (await send(c, writer, BODY, streamed=False)).exchange.result
    assert gave_up.error is not None and gave_up.error.http_status == 429 and len(gave_up.retries) == 1
    assert gave_up.retry_stopped is not None and "after 1 retries" in gave_up.retry_stopped

    async with Emulator(_refusing(2, "1")) as emu, ChatClient(emu.url) as c:
        t1 = time.monotonic()
        plain = (await send(c, writer, BODY, streamed=False)).exchange.result
    assert time.monotonic() - t1 < 0.9
    assert plain.error is not None and plain.error.http_status == 429 and plain.retries == []


async def test_a_status_not_listed_is_not_retried() -> None:
    async with Emulator(_refusing(2, "1", status=500)) as emu, ChatClient(emu.url) as c:
        c.configure(retries=RetryPolicy(statuses=[429, 503]))
        r = await c.stream_chat(BODY)
    assert r.error is not None and r.error.http_status == 500 and r.retries == []


async def test_an_http_date_retry_after_is_honoured() -> None:
    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # whole seconds: between 1 and 2 s from now
    async with Emulator(_refusing(1, when)) as emu, ChatClient(emu.url) as c:
        c.configure(retries=RetryPolicy(statuses=[429]))
        r = await c.stream_chat(BODY)
    assert r.ok, r.error
    (a,) = r.retries
    assert a.retry_after == when and a.wait_asked_s is not None and 0.5 < a.wait_asked_s <= 2.01
    assert a.wait_s == pytest.approx(a.wait_asked_s, abs=0.3)


@pytest.mark.parametrize("retry_after", [str(10**12), "99999999999999999999999", "86401"])
async def test_a_retry_after_beyond_the_budget_ends_the_retries_without_sleeping(retry_after: str) -> None:
    async with Emulator(_refusing(None, retry_after)) as emu, ChatClient(emu.url) as c:
        c.configure(retries=RetryPolicy(statuses=[429], max_wait_s=60))
        t0 = time.monotonic()
        r = await c.stream_chat(BODY)
    assert time.monotonic() - t0 < 0.9, "slept on a wait the budget could not hold"
    assert r.error is not None and r.error.http_status == 429 and r.retries == []
    assert r.retry_stopped is not None and "more than the 60 s left" in r.retry_stopped, r.retry_stopped


@pytest.mark.parametrize("retry_after", ["-5", "NaN", "1e400", "\x1b[2J\x1b[H", "x" * 10_000, None])
async def test_a_hostile_or_missing_retry_after_falls_back_to_the_bounded_backoff(retry_after: str | None) -> None:
    async with Emulator(_refusing(None, retry_after)) as emu, ChatClient(emu.url) as c:
        c.configure(retries=RetryPolicy(statuses=[429], max_retries=5, max_wait_s=1.5))
        t0 = time.monotonic()
        r = await c.stream_chat(BODY)
    took = time.monotonic() - t0
    # the 1 s backoff fits the 1.5 s budget; the next (2 s) does not: stopped without sleeping it
    assert [a.wait_asked_s for a in r.retries] == [None], r.retries
    assert 0.95 < took < 1.9, took
    assert r.error is not None and r.error.http_status == 429
    assert r.retry_stopped is not None and "the backoff asks 2 s" in r.retry_stopped
    assert all(a.retry_after is None or len(a.retry_after) <= 64 for a in r.retries)


async def test_the_retry_count_is_bounded() -> None:
    async with Emulator(_refusing(None, "0")) as emu, ChatClient(emu.url) as c:
        c.configure(retries=RetryPolicy(statuses=[429], max_retries=3))
        r = await c.stream_chat(BODY)
    assert len(r.retries) == 3 and r.error is not None
    assert r.retry_stopped is not None and "after 3 retries" in r.retry_stopped


async def test_a_head_without_end_is_bounded_not_buffered_forever() -> None:
    """A megabyte of Retry-After: the response head passes 64 KiB and the request fails as a record."""
    async with Emulator(_refusing(None, "9" * 1_000_000)) as emu, ChatClient(emu.url) as c:
        c.configure(retries=RetryPolicy(statuses=[429]))
        r = await c.stream_chat(BODY)
    assert r.error is not None and r.error.kind == "not_openai" and "64 KiB" in r.error.message, r.error
    assert r.retries == []


# -- a run ------------------------------------------------------------------------------------------


def test_a_run_retries_records_the_retries_and_times_only_the_answered_attempt(tmp_path: Path) -> None:
    md = tmp_path / "report.md"
    with EmulatorProcess(_refusing(2, "1")) as emu:
        res = invoke("run", "--endpoint", emu.url, *ARGS, "--retry-on", "429,503", "--out", str(tmp_path),
                     "--markdown", str(md))
    assert res.code == 0 and res.traceback is None, res.stderr + res.stdout[-2000:]
    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    reader = RunReader(run_dir)
    (q,) = reader.records("speed_request", SpeedRequest)
    assert q.result.ok and len(q.result.retries) == 2
    assert reader.header.plan["retries"] == {"statuses": [429, 503], "max_retries": 3, "max_wait_s": 60.0}
    row = request_rows(reader)[0]
    assert row["retries"] == 2 and row["retry_wait_s"] >= 1.9
    assert row["e2e_s"] < 0.9 and row["send_lag_s"] < 0.5, row  # the 2 s of waiting are in neither
    said = " ".join(res.stdout.split())
    assert "1 request(s) retried 2 time(s)" in said and "--retry-on 429,503" in said, said[-3000:]
    a = analyze_run(reader)
    # the batch's wall time holds the 2 s of waiting: left out of the aggregate tok/s, and said
    assert a.speed is not None and a.speed.rows[0].aggregate_tok_s is None
    assert any("their aggregate tok/s is left out" in w for w in a.warnings), a.warnings
    assert "1 request(s) retried 2 time(s)" in render_markdown(a)
    assert "1 request(s) retried 2 time(s)" in md.read_text()
    assert "1 request(s) retried 2 time(s)" in render_html([run_dir.name], [a], [], [], [])
    # a resume that changes the retries is refused, as any other changed option
    res = invoke("run", "--resume", str(run_dir), "--retry-on", "503")
    assert res.code == 2 and "--retry-on" in res.stderr and "429,503" in res.stderr, res.stderr


def test_in_rate_mode_the_response_time_holds_the_waits_and_the_service_time_does_not(tmp_path: Path) -> None:
    with EmulatorProcess(_refusing(1, "1")) as emu:
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--rate", "20", "--requests", "4",
                     "--arrival", "constant", "--retry-on", "429", "--out", str(tmp_path))
    assert res.code == 0 and res.traceback is None, res.stderr
    reader = RunReader(next(p for p in tmp_path.iterdir() if p.is_dir()))
    qs = reader.records("load_request", LoadRequest)
    retried = [q for q in qs if q.result.retries]
    assert len(qs) == 4 and len(retried) == 1 and all(q.result.ok for q in qs), [q.result.error for q in qs]
    t = load_timing(retried[0])
    assert t.ttft_response_s is not None and t.ttft_response_s >= 0.95  # from the intended start: the wait is in
    assert t.timing.ttft_s is not None and t.timing.ttft_s < 0.5  # from the answered attempt's send: it is not
    assert t.send_lag_s < 0.5  # the client kept its schedule: the first attempt went out on time
    others = [load_timing(q) for q in qs if not q.result.retries]
    assert all(o.ttft_response_s is not None and o.ttft_response_s < 0.5 for o in others)


def test_a_run_whose_every_request_outlasts_the_budget_says_so_without_waiting(tmp_path: Path) -> None:
    with EmulatorProcess(_refusing(None, str(10**12))) as emu:
        t0 = time.monotonic()
        res = invoke("run", "--endpoint", emu.url, *ARGS, "--repetitions", "3", "--retry-on", "429",
                     "--out", str(tmp_path))
    assert res.traceback is None and res.code == 0, res.stderr
    assert time.monotonic() - t0 < 60
    said = " ".join(res.stdout.split())
    assert "the server rejected 3 of 3 measured requests (HTTP 429 x3; 3 of them after their --retry-on budget ran " \
           "out)" in said, said[-3000:]
    assert "3 gave up" in said and "more than the 60 s left" in said


def test_the_gates_retries_are_recorded_and_reported(tmp_path: Path) -> None:
    """The known-answer gate goes first: its first question is refused once, retried, and answered."""
    script = EmulatorScript(**{**FAST, "output_tokens": 64}, persona="healthy",
                            faults=[Fault(kind="http_status", status=503, until=1, headers={"Retry-After": "0"})])
    with EmulatorProcess(script) as emu:
        res = invoke("run", "--endpoint", emu.url, "--scenarios", "chat_short", "--warmup", "0", "--repetitions", "1",
                     "--retry-on", "503", "--allow-untrusted", "--out", str(tmp_path))  # a busy host may untrust
    assert res.code == 0, res.stderr + res.stdout[-2000:]
    reader = RunReader(next(p for p in tmp_path.iterdir() if p.is_dir()))
    (gate,) = reader.raw_records("sanity")
    assert gate["trusted"], gate["reasons"]  # the refused question was answered on its retry
    assert sum(len(a["retries"]) for a in gate["answers"]) == 1
    said = " ".join(res.stdout.split())
    assert "known-answer gate" in said and "1 request(s) retried 1 time(s)" in said, said[-3000:]


def test_a_run_without_retry_on_keeps_todays_behaviour(tmp_path: Path) -> None:
    with EmulatorProcess(_refusing(2, "1")) as emu:
        res = invoke("run", "--endpoint", emu.url, *ARGS, "--repetitions", "2", "--out", str(tmp_path))
    assert res.code == 0, res.stderr
    reader = RunReader(next(p for p in tmp_path.iterdir() if p.is_dir()))
    results = [q.result for q in reader.records("speed_request", SpeedRequest)]
    assert [r.error.http_status if r.error else 200 for r in results] == [429, 429]
    assert all(r.retries == [] for r in results) and "retries" not in reader.header.plan
    assert "Retries" not in res.stdout


@pytest.mark.parametrize(("args", "said"), [
    (["--retry-on", "200"], "--retry-on: retries only refusals and server errors (HTTP 400-599); 200 is not one"),
    (["--retry-on", "abc"], "--retry-on: takes comma-separated HTTP statuses, e.g. 429,503; 'abc' is not a number"),
    (["--retry-on", ""], "--retry-on: takes comma-separated HTTP statuses, e.g. 429,503; got ''"),
    (["--retry-on", "429,,503"], "--retry-on: takes comma-separated HTTP statuses, e.g. 429,503; got '429,,503'"),
    (["--retry-on", "429", "--max-retries", "0"], "--max-retries must be 1..100; got 0"),
    (["--retry-on", "429", "--max-retries", "101"], "--max-retries must be 1..100; got 101"),
    (["--retry-on", "429", "--max-retry-wait", "nan"], "--max-retry-wait must be a finite number in (0, 3600]"),
    (["--retry-on", "429", "--max-retry-wait", "0"], "--max-retry-wait must be a finite number in (0, 3600]"),
    (["--max-retries", "3"], "--max-retries is the budget of --retry-on"),
    (["--max-retry-wait", "5"], "--max-retry-wait is the budget of --retry-on"),
])
def test_bad_retry_options_exit_2_with_one_line(args: list[str], said: str) -> None:
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", *args)
    assert res.traceback is None and res.code == 2, (res.code, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and said in " ".join(res.stderr.split()), res.stderr


def test_a_plan_file_takes_retries(tmp_path: Path) -> None:
    from rigbench.plan import load_plan

    plan = tmp_path / "p.yaml"
    plan.write_text("name: p\nretries: {statuses: [429, 503], max_wait_s: 5}\nrigs:\n  - {name: a, endpoint: "
                    "{base_url: 'http://127.0.0.1:9/v1'}}\n")
    loaded = load_plan(plan)
    assert loaded.plan.retries == RetryPolicy(statuses=[429, 503], max_wait_s=5)
    plan.write_text(plan.read_text().replace("[429, 503]", "[200]"))
    res = invoke("run", str(plan), "--out", str(tmp_path / "o"))
    assert res.code == 2 and "retries.statuses" in res.stderr and "200 is not one" in res.stderr, res.stderr
    res = invoke("run", str(plan), "--retry-on", "429")  # the flag is a single run's; a plan says it in its file
    assert res.code == 2 and "write them in the plan's `retries:` key" in " ".join(res.stderr.split()), res.stderr
    assert json.dumps(RetryPolicy().recorded()) == '{"statuses": [], "max_retries": 3, "max_wait_s": 60.0}'
