"""Kernel arrival stamps: recorded for every read on plain HTTP, used for TTFT/ITL, the client's own
stamping error reported; user-space stamps (TLS, the aiohttp transport, an OS that refuses) said so,
never a crash; records of format 4 load as "not recorded"."""

from __future__ import annotations

import asyncio
import json
import socket
import sys

import pytest

from rigbench.analysis import arrival_ns, request_timing, stamping_text
from rigbench.analysis._stamping import stamping_error
from rigbench.client import Accumulator, AiohttpTransport, ChatClient, _arrival, _http
from rigbench.records import SpeedRequest, StreamResult
from rigbench.testing import Delay, Emulator, EmulatorScript

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
linux = pytest.mark.skipif(sys.platform != "linux", reason="SO_TIMESTAMPNS is read on Linux only")


def _script() -> EmulatorScript:
    return EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=3))


@linux
async def test_every_chunk_carries_a_kernel_arrival_no_later_than_rigbench_own_stamp() -> None:
    async with Emulator(_script()) as emu, ChatClient(emu.url) as c:
        r = await c.stream_chat(BODY)
    assert r.ok and r.arrival is not None and r.arrival.source == "kernel", r.arrival
    assert len(r.chunk_kernel_ns) == len(r.chunk_ns) == 8
    unc = r.arrival.clock_uncertainty_ns or 0
    assert unc < 50_000  # the realtime -> perf_counter conversion is tight
    for own, kern in zip(r.chunk_ns, r.chunk_kernel_ns, strict=True):
        assert r.sent_ns < kern <= own + unc  # the kernel saw the bytes before rigbench did
    timing = request_timing(r)
    assert timing.arrival_source == "kernel"
    assert timing.ttft_s == pytest.approx((r.chunk_kernel_ns[0] - r.sent_ns) / 1e9)
    se = stamping_error([r])
    assert se.source == "kernel" and se.reads == 8 and se.late_p50_s is not None and se.late_p50_s >= -unc / 1e9
    assert "kernel arrivals" in stamping_text(se)


async def test_the_aiohttp_transport_says_user_space_stamps_and_why() -> None:
    async with Emulator(_script()) as emu, ChatClient(emu.url, transport=AiohttpTransport()) as c:
        r = await c.stream_chat(BODY)
    assert r.ok and r.arrival is not None and r.arrival.source == "user" and r.chunk_kernel_ns == []
    assert "aiohttp" in (r.arrival.reason or "")
    assert request_timing(r).arrival_source == "user"
    text = stamping_text(stamping_error([r]))
    assert text.startswith("user-space stamps:") and "aiohttp" in text


async def test_an_os_that_refuses_the_option_gives_user_space_stamps_not_a_crash(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(sock: socket.socket) -> str | None:
        return "the OS refused SO_TIMESTAMPNS on the response socket: [Errno 92] Protocol not available"

    monkeypatch.setattr(_http, "enable_kernel_stamps", refuse)
    async with Emulator(_script()) as emu, ChatClient(emu.url) as c:
        r1 = await c.stream_chat(BODY)
        r2 = await c.stream_chat(BODY)
    for r in (r1, r2):
        assert r.ok and r.arrival is not None and r.arrival.source == "user"
        assert "refused SO_TIMESTAMPNS" in (r.arrival.reason or "")
    assert "refused SO_TIMESTAMPNS" in stamping_text(stamping_error([r1, r2]))


def test_https_and_other_platforms_name_the_reason() -> None:
    assert "TLS" in (_http._no_kernel_stamps(True) or "")
    if sys.platform == "linux":
        assert _http._no_kernel_stamps(False) is None


def test_a_read_without_a_kernel_stamp_drops_to_user_space_stamps_for_that_request() -> None:
    from rigbench.records import ArrivalStamps

    acc = Accumulator()
    acc.arrival = ArrivalStamps(source="kernel", clock_offset_ns=0, clock_uncertainty_ns=10)
    ev = [json.dumps({"choices": [{"delta": {"content": "a"}}]}).encode()]
    acc.on_events(list(ev), 100, 90)
    acc.on_events(list(ev), 200, 0)  # a read the kernel did not stamp
    r = acc.result()
    assert r.arrival is not None and r.arrival.source == "user" and "1 of 2 reads" in (r.arrival.reason or "")
    assert arrival_ns(r) == ([100, 200], "user")


def test_coalesced_reads_and_lateness_are_counted_per_read() -> None:
    from rigbench.records import ArrivalStamps

    # 3 reads: one carried two chunks (the kernel dates both with its last segment)
    r = StreamResult(sent_ns=0, chunk_ns=[1_000_000, 2_000_000, 2_000_000, 3_000_000],
                     chunk_kernel_ns=[900_000, 1_500_000, 1_500_000, 2_999_000],
                     arrival=ArrivalStamps(source="kernel", clock_offset_ns=0, clock_uncertainty_ns=100))
    se = stamping_error([r])
    assert se.reads == 3 and se.coalesced_share == pytest.approx(1 / 3)
    assert se.late_max_s == pytest.approx(0.0005) and se.late_p50_s == pytest.approx(0.0001)
    # and the timing uses the kernel's arrivals: TTFT 0.9 ms, not the own 1 ms
    assert request_timing(r).ttft_s == pytest.approx(0.0009)


def test_a_run_of_kernel_and_user_stamped_requests_says_how_many_of_each_and_the_commonest_reason() -> None:
    """A read that carried three chunks is one coalesced read, not two; the lateness is per read; the
    realtime clock's uncertainty is the worst request's; user-space requests (and why: the reason most of
    them share) are counted beside the kernel-stamped ones, and a request with no chunk is no request."""
    from rigbench.records import ArrivalStamps

    def kernel(unc: int) -> ArrivalStamps:
        return ArrivalStamps(source="kernel", clock_offset_ns=0, clock_uncertainty_ns=unc)

    three = StreamResult(sent_ns=0, chunk_ns=[1_000_000, 1_000_000, 1_000_000, 2_000_000],
                         chunk_kernel_ns=[800_000, 800_000, 800_000, 1_999_000], arrival=kernel(300))
    plain = StreamResult(sent_ns=0, chunk_ns=[1_000_000, 2_000_000], chunk_kernel_ns=[996_000, 1_998_000],
                         arrival=kernel(1_200))
    short = plain.model_copy(update={"chunk_kernel_ns": [996_000]})  # a stamp missing: not the kernel's timing
    tls = StreamResult(sent_ns=0, chunk_ns=[5], arrival=ArrivalStamps(source="user", reason="TLS (https)"))
    empty = StreamResult(sent_ns=0, arrival=ArrivalStamps(source="user", reason="never said"))
    se = stamping_error([three, plain, short, tls, tls, empty])
    assert (se.source, se.requests_kernel, se.requests_user) == ("mixed", 2, 3)
    assert se.user_reason == "TLS (https)"  # two requests say it, one says nothing: the commonest reason
    assert se.reads == 4 and se.coalesced_share == pytest.approx(1 / 4)
    assert se.late_max_s == pytest.approx(0.0002) and se.late_p50_s == pytest.approx(0.000003)
    assert se.late_p99_s == pytest.approx(0.000194, abs=1e-6)  # numpy's interpolation over the four reads
    assert se.clock_uncertainty_max_s == pytest.approx(1.2e-6)
    assert "3 of 5 requests on user-space stamps (TLS (https))" in stamping_text(se)
    only_user = stamping_error([tls, short])
    assert only_user.source == "user" and only_user.late_p50_s is None and only_user.clock_uncertainty_max_s is None
    assert stamping_text(only_user) == "user-space stamps: TLS (https)"
    assert stamping_error([empty]).source == "not recorded"


def test_a_format_4_speed_request_loads_and_says_not_recorded() -> None:
    v4 = {"kind": "speed_request", "unit_id": "speed/chat_short/c1/r0/i0", "scenario": "chat_short",
          "concurrency": 1, "repetition": 0, "warmup": False, "index": 0, "input_tokens_target": 8,
          "output_tokens_target": 2, "input_tokens_measured": None, "input_tokens_shared_max": None,
          "result": {"sent_ns": 0, "chunk_ns": [10, 20], "chunk_chars": [1, 1], "chunk_kind": "cc",
                     "usage": {"completion_tokens": 2}, "http_status": 200}}
    rec = SpeedRequest.model_validate(v4)
    assert rec.result.arrival is None and rec.result.chunk_kernel_ns == []
    assert request_timing(rec.result).arrival_source == "user"
    assert stamping_text(stamping_error([rec.result])).startswith("not recorded")


@linux
def test_clock_offset_is_the_tightest_bracket() -> None:
    c = _arrival.ClockOffset.sample()
    assert 0 <= c.uncertainty_ns < 100_000
    import time

    rt = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.perf_counter_ns()
    assert abs(rt - c.offset_ns) < 1_000_000


def test_loop_choice_is_irrelevant_to_the_reader() -> None:
    # the kernel-stamped reader uses only add_reader/sock_connect, which uvloop and asyncio both have
    import uvloop  # a dependency on Linux (pyproject.toml): its absence is a failure, not a skip

    async def one() -> StreamResult:
        async with Emulator(_script()) as emu, ChatClient(emu.url) as c:
            return await c.stream_chat(BODY)

    for runner in (asyncio.run, uvloop.run):
        r = runner(one())
        assert r.ok and len(r.chunk_kernel_ns) == (8 if sys.platform == "linux" else 0)


def test_every_report_format_shows_the_runs_own_stamping_error() -> None:
    import io
    from pathlib import Path

    from rich.console import Console

    from rigbench.analysis import analyze_run
    from rigbench.records import ArrivalStamps
    from rigbench.report import render_markdown, render_terminal
    from rigbench.report._html import render_html
    from rigbench.store import RunReader

    a = analyze_run(RunReader(Path(__file__).parents[1] / "golden" / "emulator_b"))
    r = StreamResult(sent_ns=0, chunk_ns=[1_000_000, 2_000_000], chunk_kernel_ns=[900_000, 1_950_000],
                     arrival=ArrivalStamps(source="kernel", clock_offset_ns=0, clock_uncertainty_ns=40))
    kernel = a.model_copy(update={"sections": {**a.sections, "stamping": stamping_error([r])}})
    user = a.model_copy(update={"sections": {**a.sections, "stamping": stamping_error(
        [r.model_copy(update={"chunk_kernel_ns": [], "arrival": ArrivalStamps(source="user", reason="TLS (https)")})])}})
    out = io.StringIO()
    render_terminal(kernel, Console(file=out, width=200, color_system=None))
    for text in (out.getvalue(), render_markdown(kernel), render_html(["k"], [kernel])):
        assert "kernel arrivals" in text and "p50 0.075 ms" in text and "p99 0.100 ms" in text, text[-600:]
    assert "user-space stamps: TLS (https)" in render_markdown(user)
