"""The streaming HTTP path against hand-written responses: framing, splits, odd servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from rigbench.client import AiohttpTransport, ChatClient, StampedTransport, StreamTransport, _http, _sse
from rigbench.records import StreamResult

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(autouse=True, params=[(False, True), (True, True), (False, False)],
                ids=["inline", "deferred", "no-fast-path"])
def _parse_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs with parsing in data_received, with stamp-all-then-parse, and with the
    one-chunk / one-event fast paths off (the general decoders alone)."""
    defer, fast = request.param
    monkeypatch.setattr(_http, "DEFER_PARSE", defer)
    monkeypatch.setattr(_http, "FAST_PATH", fast)
    monkeypatch.setattr(_sse, "FAST_PATH", fast)


def _event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _chunk(text: str | None, finish: str | None = None) -> bytes:
    delta = {} if text is None else {"content": text}
    return _event(
        {"id": "x1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    )


SSE = (
    b": ping\n\n"
    + _chunk("Hel")
    + _chunk("lo")
    + _chunk(None, "stop")
    + _event({"id": "x1", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}})
    + b"data: [DONE]\n\n"
)


def _chunked(payload: bytes, piece: int = 7) -> bytes:
    frames = [
        b"%x\r\n%b\r\n" % (len(payload[i : i + piece]), payload[i : i + piece])
        for i in range(0, len(payload), piece)
    ]
    return b"".join(frames) + b"0\r\n\r\n"


@asynccontextmanager
async def _server(reply: Callable[[], bytes], split: int | None = None) -> AsyncIterator[str]:
    """Answers every request with reply(), written `split` bytes at a time (each its own write)."""

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await r.readuntil(b"\r\n\r\n")
                n = int(
                    next(
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                await r.readexactly(n)
                data = reply()
                step = split or len(data)
                for i in range(0, len(data), step):
                    w.write(data[i : i + step])
                    await w.drain()
                    if split:
                        await asyncio.sleep(0)
                if b"Connection: close" in data:
                    w.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        srv.close()


def _ok(r: StreamResult) -> None:
    assert r.ok, r.error
    assert r.content == "Hello" and r.finish_reason == "stop" and r.comment_events == 1
    assert r.usage == {"prompt_tokens": 1, "completion_tokens": 2} and len(r.chunk_ns) == 2


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize("split", [None, 1, 3, 50])
async def test_chunked_sse_split_anywhere(split: int | None) -> None:
    async with _server(lambda: HEAD + _chunked(SSE), split) as url, ChatClient(url) as c:
        _ok(await c.stream_chat(BODY))
        _ok(await c.stream_chat(BODY))  # same kept-alive connection, parser state reset


async def test_close_delimited_body() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    async with _server(lambda: head + SSE) as url, ChatClient(url) as c:
        _ok(await c.stream_chat(BODY))
        _ok(await c.stream_chat(BODY))  # a new connection each time


async def test_content_length_sse_body() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(SSE)
    async with _server(lambda: head + SSE, 5) as url, ChatClient(url) as c:
        _ok(await c.stream_chat(BODY))


async def test_json_instead_of_sse_is_not_openai() -> None:
    body = b'{"choices": []}'
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%b" % (
        len(body),
        body,
    )
    async with _server(lambda: reply) as url, ChatClient(url) as c:
        r = await c.stream_chat(BODY)
    assert r.error is not None and r.error.kind == "not_openai" and r.error.body == body.decode()


async def test_broken_chunk_framing_fails_that_request_only() -> None:
    bad = HEAD + b"zz\r\n" + SSE
    async with _server(lambda: bad) as url, ChatClient(url) as c:
        r = await c.stream_chat(BODY)
    assert r.error is not None and r.error.kind == "not_openai"


async def test_response_id_and_api_key_header() -> None:
    seen: list[bytes] = []

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        head = await r.readuntil(b"\r\n\r\n")
        seen.append(head)
        n = int(
            next(x.split(b":")[1] for x in head.split(b"\r\n") if x.lower().startswith(b"content-length"))
        )
        body = json.loads(await r.readexactly(n))
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        w.write(HEAD + _chunked(SSE))
        await w.drain()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}/v1"
    async with ChatClient(url, api_key="sk-test") as c:
        r = await c.stream_chat(BODY)
    srv.close()
    assert r.response_id == "x1"
    assert b"POST /v1/chat/completions HTTP/1.1" in seen[0] and b"Authorization: Bearer sk-test" in seen[0]
    assert "sk-test" not in r.model_dump_json()


@pytest.mark.parametrize("transport", [StampedTransport, AiohttpTransport])
async def test_a_body_encoded_ahead_goes_out_byte_for_byte_as_the_dict_would(transport: type[StreamTransport]) -> None:
    """The load suite encodes a window's bodies before its schedule starts (`encode_stream`): the server
    gets the same request (streamed, usage asked for, the caller's own stream_options kept), and the
    result is the same."""
    seen: list[bytes] = []

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await r.readuntil(b"\r\n\r\n")
                n = int(next(x.split(b":")[1] for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")))
                seen.append(await r.readexactly(n))
                w.write(HEAD + _chunked(SSE))
                await w.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.sockets[0].getsockname()[1]}/v1"
    body = {**BODY, "stream_options": {"continuous_usage_stats": True}}
    async with ChatClient(url, transport=transport()) as c:
        encoded = c.encode_stream(body)
        plain, ahead = await c.stream_chat(body), await c.stream_chat(encoded)
    srv.close()
    assert seen[0] == seen[1] == encoded.data
    assert json.loads(seen[1])["stream_options"] == {"continuous_usage_stats": True, "include_usage": True}
    assert body == {**BODY, "stream_options": {"continuous_usage_stats": True}}  # the caller's dict untouched
    _ok(plain)
    _ok(ahead)


def test_the_fast_paths_take_only_what_the_general_decoders_would_give() -> None:
    one = _http.HttpConnection._one_chunk
    assert one(b"5\r\nhello\r\n") == b"hello"
    for not_one in (b"5;ext=1\r\nhello\r\n",  # a chunk extension
                    b"5\r\nhello\r\n3\r\nabc\r\n",  # two chunks in one read
                    b"5\r\nhel",  # a split chunk
                    b"0\r\n\r\n",  # the last chunk
                    b"5\r\nhelloXY"):  # no CRLF after the payload
        assert one(not_one) is None, not_one
    p = _sse.SSEParser()
    assert p.feed(b"data: {}\n\n") == [b"{}"]
    for framing in (b"data: {}\r\n\r\n", b"data: a\ndata: b\n\n", b"data:{}\n\n", b": ping\n\n"):
        fast, slow = _sse.SSEParser(), _sse.SSEParser()
        got = fast.feed(framing)
        _sse.FAST_PATH = False
        try:
            assert got == slow.feed(framing), framing
        finally:
            _sse.FAST_PATH = True
    for payload in (b'{"a": [1, 2.5, null, "\\u00e9"]}', b' {"a":1} ', b"[1]", b'"s"', b"{\"a\":1}x", b"\xff", b""):
        try:
            want: object = json.loads(payload)
        except ValueError as e:
            want = type(e)
        try:
            got_obj: object = _sse.decode_json(payload)
        except ValueError as e:
            got_obj = type(e)
        assert got_obj == want, payload
