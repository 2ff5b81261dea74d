"""Arrival pattern (analysis/_arrival.py, docs/metrics.md "Arrival pattern"): content held back by a
server or a proxy is named, and speculative decoding, a healthy stream and a late-reading client are
not. Hand-made streams for each shape, then the emulator behind each buffering proxy."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from rigbench.analysis import ArrivalPattern, analyze_run, stream_arrival, summarize_arrival
from rigbench.client import ChatClient
from rigbench.records import SpeedBatch, SpeedRequest, StreamResult
from rigbench.report import render_markdown
from rigbench.store import RunHeader, RunReader, RunWriter, TrustVerdict
from rigbench.testing import BufferingProxy, Delay, Emulator, EmulatorScript

MS = 1_000_000  # ns
T0 = 1_000 * MS


def _stream(reads: list[tuple[float, int]], *, tokens: int | None = None,
            timings: dict[str, float] | None = None) -> StreamResult:
    """A stream from (read time in ms after sending, generating events in that read)."""
    stamps = [T0 + int(t * MS) for t, k in reads for _ in range(k)]
    n = len(stamps)
    return StreamResult(sent_ns=T0, done_ns=stamps[-1] + MS, chunk_ns=stamps, chunk_chars=[4] * n,
                        chunk_kind="c" * n, http_status=200, timings=timings,
                        usage={"prompt_tokens": 5, "completion_tokens": tokens if tokens is not None else n})


def _healthy(n: int = 64, itl_ms: float = 10.0, ttft_ms: float = 50.0) -> list[tuple[float, int]]:
    return [(ttft_ms + i * itl_ms, 1) for i in range(n)]


# -- the adversaries --------------------------------------------------------------------------------


def test_whole_response_in_one_read_after_a_long_wait_is_buffered() -> None:
    p = stream_arrival(_stream([(690.0, 64)]))
    assert p.kind == "whole" and p.buffered
    assert p.reads == 1 and p.steps == 64 and p.first_read_s == pytest.approx(0.69)
    assert p.detail == "64 steps in 1 read after 0.69 s"


def test_two_reads_are_still_whole() -> None:
    p = stream_arrival(_stream([(690.0, 40), (691.0, 24)]))
    assert p.kind == "whole" and p.reads == 2


def test_content_compressed_far_below_the_servers_own_decode_time_is_held() -> None:
    """A proxy that re-chunks a buffered body (several reads, a millisecond apart): llama.cpp's own
    timings say decoding took 0.63 s, the client saw it all within 2 ms."""
    reads = [(700.0 + 0.2 * i, 8) for i in range(8)]
    p = stream_arrival(_stream(reads, timings={"predicted_n": 64, "predicted_ms": 630.0}))
    assert p.kind == "whole" and p.reads == 8
    assert "though the server reports 0.63 s of decoding" in p.detail


def test_a_long_body_in_several_quick_reads_without_server_timings_is_held() -> None:
    """A whole-response proxy in front of a server that reports no decode time (vLLM, SGLang): a long
    body is split by the socket into a few reads, 1.5 ms apart in all. 1,024 steps at 0.7 M steps/s is
    no engine's pace; the control, 1,024 tokens at 1 ms each (a fast small model), is."""
    reads = [(3000.0 + 0.5 * i, 256) for i in range(4)]
    p = stream_arrival(_stream(reads))
    assert p.kind == "whole" and p.reads == 4 and p.server_decode_s is None
    assert p.detail.startswith("1024 steps in 4 reads within 1.5 ms after 3.00 s, faster than any engine")
    fast = stream_arrival(_stream(_healthy(1024, itl_ms=1.0)))
    assert fast.kind == "streamed", fast.detail
    paired = stream_arrival(_stream([(2.0 + 0.4 * i, 2) for i in range(512)]))  # 0.2 ms per step, in pairs
    assert paired.kind == "streamed", paired.detail


def test_many_steps_per_read_at_a_fixed_period_is_a_flush() -> None:
    # a proxy that flushes every 100 ms in front of a 10 ms/token engine: ~10 events a read
    reads = [(100.0 * (i + 1), 10) for i in range(6)] + [(640.0, 4)]
    p = stream_arrival(_stream(reads))
    assert p.kind == "flushed" and p.buffered
    assert p.period_s == pytest.approx(0.100) and p.steps_per_read == pytest.approx(64 / 7)
    assert "at a near-fixed 100 ms period" in p.detail


def test_a_fast_stream_read_in_pairs_at_2_ms_is_not_a_flush() -> None:
    # A healthy 1 ms/token server on a loaded host: writes or reads pair up, two steps every 2 ms,
    # as regular as a clock. Seen flagged "buffered" in the prefix-cache tests under load; a period
    # this short moves TTFT by under 2 ms and is no proxy's doing.
    reads = [(2.0 + 2.0 * i, 2) for i in range(32)]
    p = stream_arrival(_stream(reads))
    assert p.steps_per_read == pytest.approx(2.0) and p.period_s == pytest.approx(0.002)
    assert p.kind == "streamed" and not p.buffered
    # ...while the same shape at a 25 ms period is a flush
    slow = stream_arrival(_stream([(25.0 * (i + 1), 2) for i in range(32)]))
    assert slow.kind == "flushed"


def test_the_row_finding_names_the_cause_and_the_figures() -> None:
    whole = [stream_arrival(_stream([(2200.0 + i, 64)])) for i in range(12)]
    s = summarize_arrival(whole)
    assert s.buffered and s.whole == 12
    assert s.finding == "buffered by the server or a proxy: 12 of 12 requests arrived in one read after 2.2 s (median)"
    flushed = summarize_arrival([stream_arrival(_stream([(100.0 * (i + 1), 10) for i in range(7)]))] * 3)
    assert flushed.finding == ("buffered by the server or a proxy: 3 of 3 requests arrived 10.0 engine steps per "
                               "read at a near-fixed 100 ms period (median)")


# -- the healthy controls -----------------------------------------------------------------------------


def test_a_healthy_stream_is_not_flagged() -> None:
    p = stream_arrival(_stream(_healthy(), timings={"predicted_n": 64, "predicted_ms": 630.0}))
    assert p.kind == "streamed" and not p.buffered and p.steps_per_read == pytest.approx(1.0)


def test_vllm_speculation_multi_token_events_one_per_read_are_not_flagged() -> None:
    """vLLM n-gram speculation: one event per engine step, 1..5 tokens each, at the step time."""
    rng = random.Random(1)
    sizes = [rng.randint(1, 5) for _ in range(30)]
    reads = [(50.0 + 12.0 * i, 1) for i in range(len(sizes))]
    p = stream_arrival(_stream(reads, tokens=sum(sizes)))
    assert p.kind == "streamed" and p.steps_source == "events" and p.steps_per_read == pytest.approx(1.0)


def test_llamacpp_speculation_bursts_are_explained_by_its_reported_steps() -> None:
    """llama.cpp sends one event per token, so a speculative step's tokens arrive as a burst of events in
    one read, at a near-constant step time: the shape of a flush. Its timings report the steps
    (predicted_n - draft_n_accepted), one per read: not flagged."""
    rng = random.Random(2)
    bursts = [rng.randint(1, 6) for _ in range(20)]
    reads = [(50.0 + 30.0 * i, k) for i, k in enumerate(bursts)]
    n = sum(bursts)
    spec = stream_arrival(_stream(reads, timings={"predicted_n": n, "draft_n": 100, "draft_n_accepted": n - 20,
                                                  "predicted_ms": 300.0}))
    assert spec.kind == "streamed" and spec.steps == 20 and spec.steps_source == "timings"
    # the same reads without the server's step count could only be called a flush
    blind = stream_arrival(_stream(reads))
    assert blind.kind == "flushed"


def test_a_client_that_reads_late_now_and_then_is_not_a_flush() -> None:
    """Irregular coalescing (a starved event loop): several steps per read, but no period."""
    rng = random.Random(3)
    reads, t, left = [], 50.0, 64
    while left:
        k = min(left, rng.choice([1, 2, 3, 5, 8]))
        reads.append((t, k))
        t += k * 10.0 * rng.uniform(0.3, 1.7)
        left -= k
    p = stream_arrival(_stream(reads))
    assert p.steps_per_read is not None and p.steps_per_read >= 2.0  # as coalesced as a flush...
    assert p.kind == "streamed"  # ...but no fixed period


def test_a_short_answer_is_not_judged() -> None:
    p = stream_arrival(_stream([(500.0, 5)]))
    assert p.kind == "not_judged" and not p.buffered and "too short" in p.detail
    s = summarize_arrival([p])
    assert not s.buffered and s.finding is None and s.judged == 0


def test_one_buffered_request_in_twelve_is_left_out_not_the_row() -> None:
    pats = [stream_arrival(_stream(_healthy())) for _ in range(11)] + [stream_arrival(_stream([(690.0, 64)]))]
    s = summarize_arrival(pats)
    assert not s.buffered and s.whole == 1
    assert s.finding is not None and "1 of 12 requests" in s.finding


# -- the emulator behind each proxy (fast, deterministic) ---------------------------------------------


async def _patterns(script: EmulatorScript, mode: str | None, n: int = 4, max_tokens: int = 96) -> list[ArrivalPattern]:
    async with Emulator(script) as emu:
        proxy = BufferingProxy(emu.url, mode=mode) if mode else None  # type: ignore[arg-type]
        url = (await proxy.start()).url if proxy else emu.url
        try:
            async with ChatClient(url) as c:
                out = []
                for _ in range(n):
                    res = await c.stream_chat({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                               "max_tokens": max_tokens})
                    assert res.ok and res.timings is None, res.error  # the emulator reports no decode time
                    out.append(stream_arrival(res))
                return out
        finally:
            if proxy:
                await proxy.stop()


ONE_TOKEN = EmulatorScript(ttft=Delay(mean_ms=30.0), itl=Delay(mean_ms=8.0), output_tokens=96)
SPEC = ONE_TOKEN.model_copy(update={"spec_depth": 4, "spec_accept": 0.7})


LONG = EmulatorScript(ttft=Delay(mean_ms=30.0), itl=Delay(mean_ms=1.0), output_tokens=1024)


def test_emulator_long_answers_behind_the_whole_response_proxy_are_held_and_direct_they_are_not() -> None:
    """1,024 tokens buffered whole come in several reads (the socket splits the body), and the emulator
    reports no decode time: still whole. The same answers straight from the emulator stream."""
    held = asyncio.run(_patterns(LONG, "whole", n=3, max_tokens=1024))
    assert summarize_arrival(held).buffered and all(p.kind == "whole" for p in held), [p.detail for p in held]
    direct = asyncio.run(_patterns(LONG, None, n=3, max_tokens=1024))
    assert [p.kind for p in direct] == ["streamed"] * 3, [p.detail for p in direct]


@pytest.mark.parametrize(("script", "mode", "expected"), [
    (ONE_TOKEN, "whole", "whole"),
    (SPEC, "whole", "whole"),
    (ONE_TOKEN, "flush", "flushed"),
    (SPEC, "flush", "flushed"),
], ids=["whole", "whole-spec", "flush", "flush-spec"])
def test_emulator_behind_each_proxy_is_buffered(script: EmulatorScript, mode: str, expected: str) -> None:
    """What the report acts on is the row: most of its requests buffered. A flush timer late on a busy
    host may hide one request's period, never most."""
    pats = asyncio.run(_patterns(script, mode))
    s = summarize_arrival(pats)
    assert s.buffered, [p.detail for p in pats]
    assert sum(p.kind == expected for p in pats) >= 3, [p.detail for p in pats]


@pytest.mark.parametrize("script", [ONE_TOKEN, SPEC], ids=["direct", "direct-spec"])
def test_emulator_direct_is_never_flagged(script: EmulatorScript) -> None:
    pats = asyncio.run(_patterns(script, None))
    assert [p.kind for p in pats] == ["streamed"] * 4, [p.detail for p in pats]


def test_multi_token_events_with_a_token_count_in_timings_are_not_a_flush() -> None:
    """A server that reports llama.cpp-style timings (tokens, no drafts) but packs a step's tokens in
    one event, one event per read: its writes are the events, and each read carries one."""
    reads = [(50.0 + 12.0 * i, 1) for i in range(20)]
    p = stream_arrival(_stream(reads, tokens=64, timings={"predicted_n": 64, "predicted_ms": 240.0}))
    assert p.kind == "streamed" and p.steps == 20 and p.steps_source == "events"


# -- a run's rows: the latency it withholds, and an older run's report ---------------------------------


def _write_run(tmp: Path, streams: list[StreamResult]) -> RunReader:
    """A finished run recorded before this check existed (trusted), one request per batch."""
    w = RunWriter(tmp, RunHeader(run_id="r", created_at="2026-01-01T00:00:00+00:00", rigbench_version="0"))
    for rep, res in enumerate(streams):
        uid = f"speed/chat/c1/r{rep}"
        w.append(SpeedRequest(unit_id=uid + "/i0", scenario="chat", concurrency=1, repetition=rep, warmup=False,
                              index=0, input_tokens_target=16, output_tokens_target=64, input_tokens_measured=16,
                              result=res))
        w.append(SpeedBatch(unit_id=uid, scenario="chat", concurrency=1, repetition=rep, warmup=False,
                            started_ns=res.sent_ns, ended_ns=res.done_ns or 0, requests=1, failed=0))
    w.finish("complete", trust=TrustVerdict(trusted=True))
    return RunReader(tmp)


def test_a_buffered_row_withholds_latency_and_an_older_report_says_why(tmp_path: Path) -> None:
    a = analyze_run(_write_run(tmp_path, [_stream([(2200.0 + 10 * i, 64)]) for i in range(3)]))
    assert a.speed is not None
    [row] = a.speed.rows
    assert row.arrival is not None and row.arrival.buffered and row.latency_not_measurable
    assert row.ttft_s is None and row.itl_mean_s is None and row.itl_gaps_s is None and row.decode_tok_s is None
    assert row.e2e_tok_s is not None and row.e2e_latency_s is not None and row.aggregate_tok_s is not None
    # the run's verdict predates the check: the report still says it, as a warning
    assert ("latency figures: chat (c=1) buffered by the server or a proxy: 3 of 3 requests arrived in one read "
            "after 2.2 s (median); TTFT and ITL not measurable") in a.warnings
    md = render_markdown(a)
    assert "| chat | 16→64 | 3 |" in md and md.count("n/m†") >= 6  # 3 speed cells, 3 latency rows


def test_one_buffered_request_is_left_out_of_the_rows_latency(tmp_path: Path) -> None:
    streams = [_stream(_healthy()) for _ in range(3)] + [_stream([(690.0, 64)])]
    a = analyze_run(_write_run(tmp_path, streams))
    assert a.speed is not None
    [row] = a.speed.rows
    assert row.latency_not_measurable is None and row.ttft_s is not None
    assert row.ttft_s.n == 3 and row.ttft_s.max == pytest.approx(0.050)  # the 0.69 s "TTFT" is not among them
    assert row.e2e_tok_s is not None and row.e2e_tok_s.n == 4
    assert any("1 of 4 requests arrived in one read" in w and "the other 3 requests are measured" in w
               for w in a.warnings), a.warnings


def _kernel(res: StreamResult, late_ms: float) -> StreamResult:
    """The same reads with kernel arrival stamps `late_ms` before rigbench's own stamp of each read."""
    return res.model_copy(update={"chunk_kernel_ns": [t - int(late_ms * MS) for t in res.chunk_ns]})


def test_kernel_arrival_stamps_time_the_reads() -> None:
    flush = _stream([(100.0 * (i + 1), 10) for i in range(7)])
    prompt = stream_arrival(_kernel(flush, 0.05))
    assert prompt.clock == "kernel" and prompt.kind == "flushed"
    assert prompt.first_read_s == pytest.approx(0.09995) and prompt.read_late_s == pytest.approx(0.00005)
    # the same reads, each taken by the client 40 ms after its bytes arrived: the client coalesced them
    late = stream_arrival(_kernel(flush, 40.0))
    assert late.read_late_s == pytest.approx(0.040) and late.kind == "streamed"
    assert stream_arrival(flush).clock == "user"  # no kernel stamps recorded: rigbench's own
