"""The aiohttp transport: the stream read through aiohttp's StreamReader, stamped when the reading task
resumes (one task wake-up per read), user-space stamps only. Kept for comparison
(benchmarks/client_overhead.py) and as a fallback; `StampedTransport` is the default.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp

from rigbench.client._accumulator import Accumulator
from rigbench.client._sse import SSEParser
from rigbench.client._transport import BoundClient, StreamRequest, StreamTransport, deadline_error, not_sse
from rigbench.records import ArrivalStamps, RequestError

__all__ = ["AiohttpTransport"]

_perf_ns = time.perf_counter_ns

_ARRIVAL = ArrivalStamps(source="user", reason="the aiohttp transport (AiohttpTransport) reads through its own "
                         "transport, which keeps no kernel stamps")


class AiohttpTransport(StreamTransport):
    """Streams through the client's aiohttp session, the one its plain JSON calls use (so the client's own
    check of that session covers `opened`)."""

    async def handle_stream(self, request: StreamRequest) -> Accumulator:
        client = self.client
        assert client is not None, "AiohttpTransport.handle_stream before ChatClient bound it"
        acc, unanswered = await self._once(client, request)
        if unanswered:
            # A kept-alive connection the server had already closed (llama-server closes each after a
            # stream: docs/engines.md) fails the write or disconnects before any answer: the server never
            # took the request, so it is sent once more, as the plain JSON calls are. A second loss is
            # the server's.
            acc, _ = await self._once(client, request)
        return acc

    async def _once(self, client: BoundClient, request: StreamRequest) -> tuple[Accumulator, bool]:
        """One send: what it produced, and whether the connection was lost before any answer."""
        unanswered = False
        acc = Accumulator()
        acc.arrival = _ARRIVAL
        sent_ns = _perf_ns()
        acc.sent_ns = sent_ns
        try:
            async with client.aiohttp_session().post(client.url(request.path), data=request.data) as resp:
                acc.headers_ns = _perf_ns()
                acc.http_status = resp.status
                if resp.status != 200:
                    acc.retry_after = resp.headers.get("Retry-After")
                    text = (await resp.text(errors="replace"))[:2048]
                    acc.error = RequestError(
                        kind="http_status", message=f"HTTP {resp.status}", http_status=resp.status, body=text
                    )
                    return acc, False
                ctype = resp.headers.get("Content-Type", "")
                if "text/event-stream" not in ctype:
                    text = (await resp.text(errors="replace"))[:2048]
                    acc.error = not_sse(ctype, resp.status, text)
                    return acc, False
                parser = SSEParser()
                reader = resp.content
                loop = asyncio.get_running_loop()
                expiring = "idle_timeout"
                deadlines = client.deadlines
                try:
                    # the same idle (tokens, not bytes) and total deadlines as the default stack: one
                    # timeout moved before each read (asyncio.wait_for would make a task per read)
                    async with asyncio.timeout(None) as budget:
                        while not acc.finished:
                            now = _perf_ns()
                            idle_left = deadlines.idle_s - (now - (acc.chunk_ns[-1] if acc.chunk_ns else sent_ns)) / 1e9
                            total_left = deadlines.total_s - (now - sent_ns) / 1e9
                            expiring = "total_timeout" if total_left <= idle_left else "idle_timeout"
                            budget.reschedule(loop.time() + max(0.0, min(idle_left, total_left)))
                            raw = await reader.readany()
                            if not raw:
                                break
                            now = _perf_ns()
                            events = parser.feed(raw)
                            if events:
                                acc.on_events(events, now)
                except TimeoutError:
                    if not budget.expired():  # aiohttp's own read timeout: handled below
                        raise
                    acc.error = deadline_error(expiring, deadlines, acc.comments)
                    acc.done_ns = _perf_ns()
                if not acc.finished:
                    tail = parser.flush()
                    if tail:
                        acc.on_events(tail, _perf_ns())
        except TimeoutError:
            acc.error = acc.error or RequestError(kind="timeout", message="no data within the read timeout")
        except aiohttp.ClientConnectorError as e:
            acc.error = RequestError(kind="connect", message=f"cannot connect to {client.base_url}: {e}")
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as e:
            unanswered = acc.headers_ns is None and not isinstance(e, aiohttp.ClientPayloadError)
            acc.error = acc.error or RequestError(kind="disconnect", message=f"stream broken: {e}")
        except aiohttp.ClientError as e:
            acc.error = acc.error or RequestError(kind="connect", message=f"{type(e).__name__}: {e}")
        acc.end_check()
        return acc, unanswered

