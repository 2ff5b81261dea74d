"""A helper call (`post_json`: /tokenize, /apply-template, props) on a connection the server drops
before answering is sent once more on a fresh connection, instead of a traceback that ends the run
(seen live: llama-server closed an idle keep-alive connection while rigbench sized a prompt).
Adversary: a server that drops the first connection(s) after reading the request; control: a server
that drops every connection still fails the call (once retried, then the error is the server's)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from rigbench.client import ChatClient


async def _server(drop_first: int) -> tuple[asyncio.AbstractServer, str, list[int]]:
    seen = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen[0] += 1
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        await reader.readexactly(length)
        if seen[0] <= drop_first:
            writer.transport.abort()  # gone before any answer, as a closed keep-alive connection is
            return
        body = b'{"tokens": [1, 2, 3]}'
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    return srv, f"http://127.0.0.1:{port}", seen


def test_a_dropped_connection_is_sent_once_more_and_answers() -> None:
    async def go() -> tuple[int, object, int]:
        srv, url, seen = await _server(drop_first=1)
        async with srv, ChatClient(url) as client:
            status, body = await client.post_json("/tokenize", {"content": "hi"})
        return status, body, seen[0]

    status, body, connections = asyncio.run(go())
    assert (status, body, connections) == (200, {"tokens": [1, 2, 3]}, 2)


def test_a_server_that_drops_every_connection_still_fails_the_call() -> None:
    async def go() -> int:
        srv, url, seen = await _server(drop_first=10)
        async with srv, ChatClient(url) as client:
            with pytest.raises((aiohttp.ClientOSError, aiohttp.ServerDisconnectedError)):
                await client.post_json("/tokenize", {"content": "hi"})
        return seen[0]

    assert asyncio.run(go()) == 2  # one retry, not a loop
