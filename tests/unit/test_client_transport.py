"""The client's one transport seam (`StreamTransport`): every streamed request goes through the transport
the client was built with; the client, not the transport, adds the schedule, the retries and the send lag;
a stand-in server is a transport handed to a real `ChatClient`, and what it replays comes out whole."""

from __future__ import annotations

import pytest

from rigbench.client import (
    Accumulator,
    AiohttpTransport,
    ChatClient,
    RetryPolicy,
    SelfCheckMonitor,
    StampedTransport,
    StreamRequest,
    StreamTransport,
    use_monitor,
)
from rigbench.records import ArrivalStamps, RequestError, RetryAttempt, StreamResult
from rigbench.testing import Delay, Emulator, EmulatorScript

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
SCHEDULED_NS = 1_000_000_000


class _Scripted(StreamTransport):
    """A stand-in server answering each attempt with the next status of `statuses` (Retry-After: 0), sent
    5 ms after the schedule over a connection whose opening took 2 of them."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.seen: list[StreamRequest] = []

    async def handle_stream(self, request: StreamRequest) -> Accumulator:
        self.seen.append(request)
        status = self.statuses[len(self.seen) - 1]
        acc = Accumulator()
        acc.sent_ns = SCHEDULED_NS + 5_000_000
        acc.connect_ns = acc.sent_ns - 2_000_000
        acc.http_status = status
        if status == 200:
            acc.content.append("hi")
            acc.finish_reason, acc.done = "stop", True
        else:
            acc.retry_after = "0"
            acc.error = RequestError(kind="http_status", message=f"HTTP {status}", http_status=status)
        acc.done_ns = acc.sent_ns + 1_000_000
        return acc


async def test_the_client_adds_schedule_retries_and_send_lag_to_what_its_transport_returns() -> None:
    """Retries and send lag are the client's: a transport (here a stand-in refusing twice) only sends once
    and reports. The path and the one encoded body reach the transport unchanged on every attempt; the send
    lag is noted once, for the first attempt, less the connection's opening (3 ms, not 5)."""
    server = _Scripted([429, 503, 200])
    monitor = SelfCheckMonitor("seam")
    use_monitor(monitor)
    async with ChatClient("http://127.0.0.1:9/v1", transport=server) as c:
        c.configure(retries=RetryPolicy(statuses=[429, 503]))
        r = await c.stream_chat(BODY, path="/completions", scheduled_ns=SCHEDULED_NS)
    use_monitor(None)
    assert r.ok and r.content == "hi" and r.scheduled_ns == SCHEDULED_NS
    assert [(a.attempt, a.http_status, a.retry_after) for a in r.retries] == [(1, 429, "0"), (2, 503, "0")]
    assert [q.path for q in server.seen] == ["/completions"] * 3
    assert len({q.data for q in server.seen}) == 1
    assert server.seen[0].json() == {**BODY, "stream": True, "stream_options": {"include_usage": True}}
    assert monitor.send_lags_ns == [3_000_000]


def test_a_transport_serves_one_client() -> None:
    """A transport keeps the base URL, credentials and connection pool of the client that bound it: shared
    with a second client it would send that client's requests to the first one's server."""
    shared = StampedTransport()
    ChatClient("http://127.0.0.1:8001/v1", transport=shared)
    with pytest.raises(ValueError, match=r"already serves the ChatClient of http://127.0.0.1:8001/v1"):
        ChatClient("http://127.0.0.1:8002/v1", transport=shared)


@pytest.mark.parametrize("transport", [StampedTransport, AiohttpTransport])
async def test_the_connection_limit_is_fixed_once_the_transport_holds_connections(
        transport: type[StreamTransport]) -> None:
    """The pool is sized at the first request: a later `configure(max_connections=...)` would be silently
    ignored, so it is refused, on either transport; before the first request it is taken."""
    script = EmulatorScript(ttft=Delay(mean_ms=0), itl=Delay(mean_ms=0), output_tokens=3)
    async with Emulator(script) as emu, ChatClient(emu.url, transport=transport()) as c:
        c.configure(max_connections=8)
        assert c.max_connections == 8
        assert (await c.stream_chat(BODY)).ok
        with pytest.raises(RuntimeError, match=r"max_connections=\.\.\.\) after the first request"):
            c.configure(max_connections=4)


def test_a_replayed_result_comes_out_whole() -> None:
    """What a stand-in server replays (`Accumulator.replay`) is the result the client returns: every field a
    transport fills survives (the sample sets each one away from its default, so a field added to
    StreamResult and not replayed fails here); schedule and retries are the client's, left to it."""
    client_fields = {"scheduled_ns", "retries", "retry_stopped"}
    sample = StreamResult(
        sent_ns=10, connect_ns=5, headers_ns=20, first_event_ns=30, done_ns=90, first_content_ns=40,
        response_id="r1", chunk_ns=[40, 50], chunk_chars=[2, 3], chunk_kind="cr", coalesced_events=1,
        chunk_kernel_ns=[39, 49], first_event_kernel_ns=29,
        arrival=ArrivalStamps(source="kernel", clock_offset_ns=7, clock_uncertainty_ns=3), empty_events=2,
        comment_events=4, content="hi", reasoning="hmm", reasoning_field="reasoning",
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        finish_reason="stop", usage={"completion_tokens": 2}, timings={"predicted_n": 2}, model="m",
        http_status=200, error=RequestError(kind="disconnect", message="late"),
    )
    defaults = StreamResult(sent_ns=0)
    unset = [f for f in StreamResult.model_fields
             if f not in client_fields and getattr(sample, f) == getattr(defaults, f)]
    assert unset == [], "set these in the sample, and replay them if Accumulator.replay does not"
    assert Accumulator.replay(sample).result() == sample
    retried = sample.model_copy(update={"scheduled_ns": 1, "retry_stopped": "budget", "retries": [RetryAttempt(
        attempt=1, http_status=429, retry_after=None, wait_asked_s=None, wait_s=0.0, sent_ns=1, connect_ns=None,
        done_ns=2)]})
    assert Accumulator.replay(retried).result() == sample
