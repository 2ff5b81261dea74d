"""The default transport: rigbench's own HTTP/1.1 reader (`_http.py`), kernel arrival stamps where the OS
gives them.

Each socket read is stamped with `perf_counter_ns()` in the first Python code that sees it (and, on
Linux over plain HTTP, carries the kernel's receive time too: `KernelStampedConnection`); its SSE
events go to the accumulator right there (`_StreamSink`), and the waiting task wakes once per request.
One timer per request enforces its read, idle and total deadlines (`_DeadlineTimer`).
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from rigbench.client._accumulator import Accumulator
from rigbench.client._deadlines import Deadlines
from rigbench.client._http import ConnectionPool, HttpConnection, KernelStampedConnection, ResponseHead
from rigbench.client._sse import SSEParser
from rigbench.client._transport import (
    BoundClient,
    StreamRequest,
    StreamTransport,
    deadline_error,
    not_sse,
    user_stamps,
)
from rigbench.records import RequestError

__all__ = ["StampedTransport"]

_perf_ns = time.perf_counter_ns


class StampedTransport(StreamTransport):
    """Streams over keep-alive connections of one `ConnectionPool`, opened at the first request."""

    def __init__(self) -> None:
        self._pool: ConnectionPool | None = None
        self._prefix = ""
        self._auth = b""

    def bind(self, client: BoundClient) -> None:
        super().bind(client)
        self._prefix = urlsplit(client.base_url).path.rstrip("/")
        auth = client.authorization
        self._auth = f"Authorization: {auth}\r\n".encode() if auth else b""

    @property
    def opened(self) -> bool:
        return self._pool is not None

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _pool_get(self, client: BoundClient) -> ConnectionPool:
        if self._pool is None:
            self._pool = ConnectionPool(client.base_url, limit=client.max_connections,
                                        connect_s=client.deadlines.connect_s)
        return self._pool

    async def handle_stream(self, request: StreamRequest) -> Accumulator:
        client = self.client
        assert client is not None, "StampedTransport.handle_stream before ChatClient bound it"
        data, path = request.data, request.path
        pool = self._pool_get(client)
        target = (self._prefix + (path if path.startswith("/") else "/" + path)).encode()
        wire = (
            b"POST "
            + target
            + b" HTTP/1.1\r\nHost: "
            + pool.host_header.encode()
            + b"\r\nUser-Agent: rigbench\r\nAccept: text/event-stream\r\n"
            b"Content-Type: application/json\r\nContent-Length: "
            + str(len(data)).encode()
            + b"\r\n"
            + self._auth
            + b"\r\n"
            + data
        )
        loop = asyncio.get_running_loop()
        for attempt in range(2):
            acc = Accumulator()
            try:
                # the retry of a request a kept-alive connection lost goes on a new connection: another
                # idle one may have been closed by the server just the same (llama-server closes every
                # connection after a streamed response: docs/engines.md)
                conn, opened_ns = await pool.acquire(fresh=attempt > 0)
            except (TimeoutError, OSError) as e:
                acc.sent_ns = _perf_ns()
                what = "timed out" if isinstance(e, asyncio.TimeoutError) else str(e)
                acc.error = RequestError(kind="connect", message=f"cannot connect to {client.base_url}: {what}")
                return acc
            acc.connect_ns = opened_ns
            clock = pool.clock
            if clock is not None and isinstance(conn, KernelStampedConnection):
                acc.arrival = clock.stamps
            else:
                acc.arrival = user_stamps(pool.arrival_note)
            sink = _StreamSink(acc, loop.create_future())
            try:
                acc.sent_ns = conn.send(wire, sink)
                timer = _DeadlineTimer(loop, conn, sink, client.deadlines)
                try:
                    await sink.fut
                finally:
                    timer.cancel()
            except BaseException:
                conn.close()
                raise
            finally:
                pool.release(conn)
            # A kept-alive connection the server had already closed (it answered nothing, not even a
            # status line, so it never took the request): send it once more, on a new connection.
            if sink.stale and opened_ns is None and attempt == 0:
                continue
            if sink.stale and attempt == 1 and acc.error is not None:
                acc.error = acc.error.model_copy(update={"message": (
                    "stream broken: the server closed a new connection before answering (the request had "
                    "been sent once on a kept-alive connection, which it closed unanswered too)")})
            return acc
        return acc


class _StreamSink:
    """Feeds one response's bytes, stamped in `data_received`, to the SSE parser and accumulator."""

    __slots__ = ("acc", "ctype", "err_body", "fut", "mode", "parser", "stale")

    def __init__(self, acc: Accumulator, fut: asyncio.Future[None]) -> None:
        self.acc = acc
        self.fut = fut
        self.parser = SSEParser()
        self.mode = ""  # "sse" | "error" | "not_sse"
        self.err_body: list[bytes] = []
        self.stale = False
        self.ctype = ""

    def on_head(self, head: ResponseHead, now_ns: int) -> None:
        acc = self.acc
        acc.headers_ns = now_ns
        acc.http_status = head.status
        if head.status != 200:
            self.mode = "error"
            acc.retry_after = head.headers.get("retry-after")
        elif "text/event-stream" not in head.content_type:
            self.mode = "not_sse"
            self.ctype = head.content_type
        else:
            self.mode = "sse"

    def on_body(self, data: bytes, now_ns: int, kernel_ns: int) -> bool:
        acc = self.acc
        if self.mode == "sse":
            if acc.finished:
                return False  # after [DONE]: drain to the end of the body so the connection is reused
            events = self.parser.feed(data)
            if events:
                acc.on_events(events, now_ns, kernel_ns)
                if acc.finished:
                    self.resolve()
                    return acc.error is not None
            return False
        self.err_body.append(data)
        return sum(map(len, self.err_body)) > 65536  # enough evidence; do not read a huge body

    def on_end(self, exc: BaseException | None, now_ns: int) -> None:
        acc = self.acc
        if not acc.finished:
            if self.mode == "sse":
                tail = self.parser.flush()
                if tail:
                    acc.on_events(tail, now_ns, acc.kernel_ns)  # the tail came with the last read
            elif self.mode in ("error", "not_sse"):
                text = b"".join(self.err_body).decode(errors="replace")[:2048]
                status = acc.http_status or 0
                acc.error = (
                    RequestError(kind="http_status", message=f"HTTP {status}", http_status=status, body=text)
                    if self.mode == "error"
                    else not_sse(self.ctype, status, text)
                )
            elif exc is not None and acc.headers_ns is None and acc.first_event_ns is None:
                self.stale = True
            if exc is not None and acc.error is None and not acc.done:
                if isinstance(exc, ValueError):
                    acc.error = RequestError(kind="not_openai", message=str(exc))
                else:
                    acc.error = RequestError(kind="disconnect", message=f"stream broken: {exc}")
            acc.end_check()
            if acc.done_ns is None:
                acc.done_ns = now_ns
        self.resolve()

    def resolve(self) -> None:
        if not self.fut.done():
            self.fut.set_result(None)


class _DeadlineTimer:
    """Fails a request that goes `read_s` without a byte (kind `timeout`), `idle_s` without a generated
    token (`idle_timeout`), or runs past `total_s` (`total_timeout`): its `Deadlines`.

    Adversary: a server that keeps the stream open with SSE keep-alive comments and never
    generates: bytes keep the read timeout quiet, so the idle deadline counts tokens, not bytes.
    One timer per request, re-armed lazily from the latest stamps.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, conn: HttpConnection, sink: _StreamSink,
                 deadlines: Deadlines) -> None:
        self.loop, self.conn, self.sink, self.deadlines = loop, conn, sink, deadlines
        first = min(deadlines.read_s, deadlines.idle_s, deadlines.total_s)
        self.h: asyncio.TimerHandle | None = loop.call_later(first, self._check)

    def _check(self) -> None:
        acc, d = self.sink.acc, self.deadlines
        now = _perf_ns()
        start = acc.sent_ns or now
        last_token = acc.chunk_ns[-1] if acc.chunk_ns else start
        read_left = d.read_s - (now - max(self.conn.last_ns, start)) / 1e9
        idle_left = d.idle_s - (now - last_token) / 1e9
        total_left = d.total_s - (now - start) / 1e9
        if read_left > 0 and idle_left > 0 and total_left > 0:
            self.h = self.loop.call_later(min(read_left, idle_left, total_left), self._check)
            return
        self.h = None
        if not acc.finished:
            if read_left <= 0 < total_left:
                acc.error = RequestError(kind="timeout", message=f"no data for {d.read_s:g} s (read timeout)")
            else:
                acc.error = deadline_error("total_timeout" if total_left <= 0 else "idle_timeout", d, acc.comments)
            acc.done_ns = now
        self.conn.close()
        self.sink.resolve()

    def cancel(self) -> None:
        if self.h is not None:
            self.h.cancel()
            self.h = None


