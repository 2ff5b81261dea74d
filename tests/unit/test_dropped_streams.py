"""A stream a healthy server drops is sent again on a new connection; one a broken server drops is its fault.

Why llama-server drops streams (issue 30 item 7, docs/engines.md): it closes every connection after a
streamed response while advertising `Keep-Alive: timeout=5, max=100`. A client that reuses the
connection before the close reaches it loses the request: no status line, no byte. rigbench sent such a
request once more, but on any idle connection, which with several streams ending together was often
closed by the server just the same: the known-answer gate then failed one question and the run was
UNTRUSTED by chance.

Adversary played here (the emulator's `close_after_stream`, the race's worst case: every reuse loses its
request): the gate's own traffic, four streams at a time. Controls: a server that keeps connections alive
needs no retry; a stream dropped after its answer began (the server was generating) is never sent again
and fails the gate; a server that drops a new connection unanswered fails the request, with one retry at
most."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from rigbench.client import AiohttpTransport, ChatClient
from rigbench.client._http import ConnectionPool, KernelStampedConnection
from rigbench.honesty import run_sanity_gate
from rigbench.records import StreamResult
from rigbench.testing import Delay, Emulator, EmulatorScript, Fault

HEALTHY = EmulatorScript(persona="healthy", ttft=Delay(mean_ms=1.0), itl=Delay(mean_ms=0.5))
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


async def _gate(script: EmulatorScript) -> tuple[object, Emulator]:
    async with Emulator(script) as emu, ChatClient(emu.url) as client:
        verdict = await run_sanity_gate(client, "m", question_seed=7)
    return verdict, emu


def test_the_gate_survives_a_server_that_closes_every_connection_after_a_stream() -> None:
    verdict, emu = asyncio.run(_gate(HEALTHY.model_copy(update={"close_after_stream": True})))
    errors = [a.error for a in verdict.answers if a.error]  # type: ignore[attr-defined]
    assert errors == [] and verdict.trusted, verdict  # type: ignore[attr-defined]
    assert emu.dropped_requests >= 4  # the race was really played: reused connections lost requests


def test_the_second_send_never_takes_another_idle_connection() -> None:
    """Four streams end together: four idle connections, every one closed by the server. The next request
    loses its first send on one of them; its second send must not take another."""
    async def go() -> tuple[list[object], int]:
        async with Emulator(HEALTHY.model_copy(update={"close_after_stream": True})) as emu, \
                ChatClient(emu.url) as client:
            first = await asyncio.gather(*(client.stream_chat(BODY) for _ in range(4)))
            assert all(r.ok for r in first) and emu.connections_total == 4
            later = [await client.stream_chat(BODY) for _ in range(3)]
        return later, emu.dropped_requests

    later, dropped = asyncio.run(go())
    assert [r.error for r in later] == [None, None, None]  # type: ignore[attr-defined]
    assert all(r.connect_ns is not None for r in later) and dropped == 3  # type: ignore[attr-defined]


def test_a_server_that_keeps_connections_alive_needs_no_second_send() -> None:
    verdict, emu = asyncio.run(_gate(HEALTHY))
    assert verdict.trusted and emu.dropped_requests == 0  # type: ignore[attr-defined]
    assert emu.connections_total <= 4  # four at a time, each connection reused


@pytest.mark.parametrize("close_after_stream", [False, True])
def test_a_stream_dropped_mid_answer_is_never_sent_again_and_fails_the_gate(close_after_stream: bool) -> None:
    # the 7th stream is cut after two tokens (on a reused connection unless close_after_stream): the server had the request and was answering
    script = HEALTHY.model_copy(update={"close_after_stream": close_after_stream,
                                        "faults": [Fault(kind="disconnect", at_token=2, every=1000, offset=6)]})
    verdict, emu = asyncio.run(_gate(script))
    failed = [a for a in verdict.answers if a.error]  # type: ignore[attr-defined]
    assert len(failed) == 1 and failed[0].error.startswith("disconnect: stream broken")
    assert not verdict.trusted and any("request failed" in r for r in verdict.reasons)  # type: ignore[attr-defined]
    assert sum(1 for t in emu.truth if t.fault == "disconnect") == 1  # served once, not retried


def test_a_reused_connection_dropped_after_the_answer_began_is_not_sent_again() -> None:
    async def go() -> tuple[object, object, Emulator]:
        async with Emulator(HEALTHY) as emu, ChatClient(emu.url) as client:
            first = await client.stream_chat(BODY)
            cut = {**BODY, "x_emulator": {"faults": [Fault(kind="disconnect", at_token=2).model_dump()]}}
            second = await client.stream_chat(cut)
        return first, second, emu

    first, second, emu = asyncio.run(go())
    assert first.ok and second.connect_ns is None  # type: ignore[attr-defined]  # the kept-alive connection
    assert second.error is not None and second.error.kind == "disconnect"  # type: ignore[attr-defined]
    assert second.headers_ns is not None and len(second.chunk_ns) == 2  # type: ignore[attr-defined]
    assert len(emu.truth) == 2  # served once: the server was answering it, so it is never sent again


def test_a_server_that_drops_new_connections_unanswered_fails_the_request() -> None:
    async def go() -> tuple[object, int]:
        seen = [0]

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen[0] += 1
            await reader.readuntil(b"\r\n\r\n")
            writer.transport.abort()  # the request read, no answer at all

        srv = await asyncio.start_server(handle, "127.0.0.1", 0)
        async with srv, ChatClient(f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}/v1") as client:
            r = await client.stream_chat(BODY)
        return r, seen[0]

    r, connections = asyncio.run(go())
    assert r.error is not None and r.error.kind == "disconnect"  # type: ignore[attr-defined]
    assert connections == 1  # a new connection lost: nothing tells it was not taken, so it is not sent again


def test_a_reused_connection_lost_twice_is_the_servers_fault_with_the_evidence() -> None:
    """The second send goes on a new connection; when that one is dropped too, the error says both."""
    async def go() -> tuple[object, int]:
        seen = [0]

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen[0] += 1
            first = seen[0] == 1
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                n = next(int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length"))
                await reader.readexactly(n)
                if not first:
                    writer.transport.abort()
                    return
                first = False  # answer the first request, keep the connection, drop the next one
                ev = b'data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\ndata: [DONE]\n\n'
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                             + b"%x\r\n%b\r\n0\r\n\r\n" % (len(ev), ev))
                await writer.drain()

        srv = await asyncio.start_server(handle, "127.0.0.1", 0)
        async with srv, ChatClient(f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}/v1") as client:
            assert (await client.stream_chat(BODY)).error is None
            r = await client.stream_chat(BODY)
        return r, seen[0]

    r, connections = asyncio.run(go())
    assert connections == 2 and r.error is not None  # type: ignore[attr-defined]
    assert "closed a new connection before answering" in r.error.message  # type: ignore[attr-defined]
    assert "kept-alive connection, which it closed unanswered too" in r.error.message  # type: ignore[attr-defined]


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    """The server's close can sit in the socket before the loop has read it: a request written on the
    connection then is lost. The pool looks before it reuses one."""
    async def go(lsock: socket.socket) -> tuple[bool, bool]:
        pool = ConnectionPool(f"http://127.0.0.1:{lsock.getsockname()[1]}", limit=4, connect_s=5)
        conn = await pool.open()
        assert isinstance(conn, KernelStampedConnection)  # the default on Linux: it owns its socket
        peer, _ = lsock.accept()
        open_before = conn.usable()
        peer.close()  # the server's FIN...
        time.sleep(0.05)  # ...reaches the client's socket while its event loop does not run
        usable_after = conn.usable()
        pool.close()
        return open_before, usable_after

    with socket.create_server(("127.0.0.1", 0)) as lsock:
        open_before, usable_after = asyncio.run(go(lsock))
    assert open_before and not usable_after


def test_the_aiohttp_transport_sends_a_request_lost_on_a_closed_kept_alive_connection_once_more() -> None:
    """The same adversary through the other transport: each later request goes out first on the kept-alive
    connection the server closed after the previous stream and is lost unanswered; it is sent once more,
    on a new connection, and answered (it failed as `disconnect` before: seen on the real llama-server,
    tests/live/test_transports_live.py)."""
    async def go() -> tuple[list[StreamResult], int]:
        async with Emulator(HEALTHY.model_copy(update={"close_after_stream": True})) as emu, \
                ChatClient(emu.url, transport=AiohttpTransport()) as client:
            results = [await client.stream_chat(BODY) for _ in range(3)]
        return results, emu.dropped_requests

    results, dropped = asyncio.run(go())
    assert [r.error for r in results] == [None, None, None]
    assert dropped == 2  # the race was really played, once per later request


def test_the_aiohttp_transport_never_sends_again_a_stream_dropped_mid_answer() -> None:
    """The control: a stream the server cut after it began answering was taken by the server; it fails
    as `disconnect` and is served once."""
    script = HEALTHY.model_copy(update={"faults": [Fault(kind="disconnect", at_token=2, every=1000)]})

    async def go() -> tuple[StreamResult, Emulator]:
        async with Emulator(script) as emu, ChatClient(emu.url, transport=AiohttpTransport()) as client:
            return await client.stream_chat(BODY), emu

    r, emu = asyncio.run(go())
    assert r.error is not None and r.error.kind == "disconnect" and len(emu.truth) == 1
