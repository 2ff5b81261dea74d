"""The one streaming OpenAI-compatible client. Every suite talks to the server through it.

The per-chunk path stamps `perf_counter_ns()` once per socket read, in the protocol's
`data_received` (see `_http.py` for why not aiohttp there), and appends a few ints per event;
everything else (metrics, token accounting) happens later in `rigbench.analysis`.
Plain JSON calls (/models, /tokenize, /metrics...) go through aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

import aiohttp

from rigbench.client._deadlines import Deadlines
from rigbench.client._http import ConnectionPool, HttpConnection, KernelStampedConnection, ResponseHead
from rigbench.client._retry import RETRY_AFTER_CHARS, RetryPolicy
from rigbench.client._selfcheck import current_monitor
from rigbench.client._sse import COMMENT, Malformed, SSEParser, decode_json
from rigbench.records import ArrivalStamps, RequestError, RetryAttempt, StreamResult

__all__ = ["ChatClient", "EncodedBody", "JsonReply"]

_perf_ns = time.perf_counter_ns


class JsonReply(NamedTuple):
    """A plain (non-streamed) call's answer: status, parsed JSON (or the text when it is not JSON), stamps."""

    status: int
    data: Any
    sent_ns: int
    done_ns: int
    retry_after: str | None = None  # the answer's Retry-After header
    retries: tuple[RetryAttempt, ...] = ()  # refused attempts before this one (`complete_chat` under --retry-on)
    retry_stopped: str | None = None  # why the retries ended while still refused


class EncodedBody:
    """A streaming request's body, JSON-encoded ahead of its send (`ChatClient.encode_stream`): the load
    suite encodes a window's bodies before its schedule starts, so encoding never delays a send."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class ChatClient:
    """Async client for one OpenAI-compatible base URL (e.g. `http://127.0.0.1:8080/v1`).

    The API key is sent as a bearer token and never stored in any record. `deadlines` bounds every
    request (`Deadlines`: its defaults, unless the run sets them); `retries` says which refusals are
    sent again (`RetryPolicy`: none by default).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        max_connections: int = 1024,
        deadlines: Deadlines | None = None,
        http_stack: Literal["asyncio", "aiohttp"] = "asyncio",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._connector_limit = max_connections
        self._session: aiohttp.ClientSession | None = None
        # The streaming path: "asyncio" (the default, chosen by benchmarks/client_overhead.py)
        # or "aiohttp" (kept for comparison and as a fallback, e.g. behind a proxy).
        self.http_stack = http_stack
        self.deadlines = deadlines if deadlines is not None else Deadlines()
        self.retries = RetryPolicy()
        self._pool: ConnectionPool | None = None
        self._path_prefix = urlsplit(self.base_url).path.rstrip("/")
        self._auth = f"Authorization: Bearer {api_key}\r\n".encode() if api_key else b""

    @property
    def max_connections(self) -> int:
        return self._connector_limit

    def configure(self, *, deadlines: Deadlines | None = None, max_connections: int | None = None,
                  retries: RetryPolicy | None = None) -> None:
        """Set the per-request deadlines, the connection limit and the retry policy before the first request."""
        if retries is not None:
            self.retries = retries
        opened = self._pool is not None or self._session is not None
        if deadlines is not None:
            # the connect and read deadlines live in the open connection pool and session
            if opened and (deadlines.connect_s, deadlines.read_s) != (self.deadlines.connect_s,
                                                                       self.deadlines.read_s):
                raise RuntimeError("ChatClient.configure(deadlines=...) changes connect_s/read_s after the "
                                   "first request")
            self.deadlines = deadlines
        if max_connections is not None:
            if opened:
                raise RuntimeError("ChatClient.configure(max_connections=...) after the first request")
            self._connector_limit = max_connections

    @property
    def server_root(self) -> str:
        """The server's root URL (base URL without a trailing `/v1`), for /health, /metrics..."""
        return self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url

    def _sess(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._connector_limit, force_close=False),
                timeout=aiohttp.ClientTimeout(total=None, connect=self.deadlines.connect_s,
                                              sock_read=self.deadlines.read_s),
                headers=self._headers,
                auto_decompress=False,
            )
        return self._session

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plain JSON calls -------------------------------------------------------------------

    async def get_json(self, url: str, *, timeout_s: float = 10.0) -> tuple[int, Any]:
        """GET an absolute URL or a path under the base URL; returns (status, parsed JSON or text)."""
        r = await self._request("GET", url, None, timeout_s)
        return r.status, r.data

    async def post_json(self, url: str, body: dict[str, Any], *, timeout_s: float = 600.0) -> tuple[int, Any]:
        """POST a helper call (/tokenize, /apply-template...): never retried under `retries` (they are
        rigbench's own calls, not the workload); `complete_chat` is the non-streamed chat completion."""
        r = await self._request("POST", url, body, timeout_s)
        return r.status, r.data

    async def complete_chat(self, body: dict[str, Any], *, path: str = "/chat/completions",
                            timeout_s: float = 600.0) -> JsonReply:
        """One non-streamed chat completion (`stream` is left as the body says): a refusal the retry policy
        covers is sent again as a streamed one is, and the reply's stamps are the answered attempt's."""
        retries: list[RetryAttempt] = []
        while True:
            r = await self._request("POST", path, body, timeout_s)
            again, stopped = await self._retry(r.status, r.retry_after, r.sent_ns, None, r.done_ns, retries)
            if not again:
                return r._replace(retries=tuple(retries), retry_stopped=stopped)

    async def get_text(self, url: str, *, timeout_s: float = 10.0) -> tuple[int, str]:
        async with self._sess().get(self._url(url), timeout=aiohttp.ClientTimeout(total=timeout_s)) as r:
            return r.status, await r.text(errors="replace")

    def _url(self, url: str) -> str:
        if url.startswith(("http://", "https://")):
            return url
        return self.base_url + (url if url.startswith("/") else "/" + url)

    async def _request(self, method: str, url: str, body: dict[str, Any] | None, timeout_s: float) -> JsonReply:
        try:
            return await self._request_once(method, url, body, timeout_s)
        except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError):
            # A keep-alive connection the server closed while it sat idle fails on the next write ("Can not
            # write request body", or a disconnect before any answer): the request never reached the
            # server, so it is sent once more, on a fresh connection. A second failure is the server's.
            return await self._request_once(method, url, body, timeout_s)

    async def _request_once(self, method: str, url: str, body: dict[str, Any] | None, timeout_s: float) -> JsonReply:
        sent_ns = _perf_ns()
        async with self._sess().request(
            method, self._url(url), json=body, timeout=aiohttp.ClientTimeout(total=timeout_s)
        ) as r:
            text = await r.text(errors="replace")
            data: Any = text
            with contextlib.suppress(ValueError):  # not JSON: the text, as the server sent it
                data = json.loads(text)
            return JsonReply(r.status, data, sent_ns, _perf_ns(), r.headers.get("Retry-After"))

    async def _retry(self, status: int | None, retry_after: str | None, sent_ns: int, connect_ns: int | None,
                     done_ns: int | None, retries: list[RetryAttempt]) -> tuple[bool, str | None]:
        """After an attempt: (send it again?, why the retries stopped). When the policy covers the refusal and
        the request's budget allows, waits what it asks and records the attempt in `retries`."""
        if not self.retries.statuses:
            return False, None
        decision = self.retries.decide(status, retry_after, retries_done=len(retries),
                                       waited_s=sum(a.wait_s for a in retries))
        if decision is None or not decision.retry:
            return False, decision.reason if decision is not None else None
        t0 = _perf_ns()
        await asyncio.sleep(decision.wait_s)
        retries.append(RetryAttempt(
            attempt=len(retries) + 1, http_status=status or 0,
            retry_after=retry_after[:RETRY_AFTER_CHARS] if retry_after is not None else None,
            wait_asked_s=decision.wait_asked_s, wait_s=(_perf_ns() - t0) / 1e9, sent_ns=sent_ns,
            connect_ns=connect_ns, done_ns=done_ns if done_ns is not None else t0))
        return True, None

    # -- the streaming path -----------------------------------------------------------------

    @staticmethod
    def encode_stream(body: dict[str, Any]) -> EncodedBody:
        """`body` as `stream_chat` sends it (streamed, with usage), encoded once; pass it to `stream_chat`."""
        payload = dict(body)
        payload["stream"] = True
        opts = dict(payload.get("stream_options") or {})
        opts.setdefault("include_usage", True)
        payload["stream_options"] = opts
        return EncodedBody(json.dumps(payload).encode())

    async def stream_chat(
        self, body: dict[str, Any] | EncodedBody, *, path: str = "/chat/completions", scheduled_ns: int | None = None
    ) -> StreamResult:
        """Send one streaming chat completion (or completion, with `path="/completions"`) and
        record everything it produced.

        `scheduled_ns`: when the caller meant the request to go out (default: now); the gap to
        the actual write, less any connection opening, is the send lag the self-check watches.
        Never raises for a failure of the server: that becomes `StreamResult.error`.

        A refusal the retry policy covers is sent again after the wait it allows; the result's stamps
        are the last attempt's, and `retries` lists the attempts before it (docs/metrics.md, "Retries").
        `body` may come encoded already (`encode_stream`).
        """
        data = (body if isinstance(body, EncodedBody) else self.encode_stream(body)).data
        if scheduled_ns is None:
            scheduled_ns = _perf_ns()
        retries: list[RetryAttempt] = []
        while True:
            if self.http_stack == "aiohttp":
                acc = await self._stream_aiohttp(data, path)
            else:
                acc = await self._stream_asyncio(data, path)
            mon = current_monitor()
            if mon is not None and acc.sent_ns and not retries:  # a retry goes out when its wait ends, by design
                opening = (acc.sent_ns - acc.connect_ns) if acc.connect_ns is not None else 0
                mon.note_send_lag(acc.sent_ns - scheduled_ns - opening)
            again, acc.retry_stopped = await self._retry(acc.http_status, acc.retry_after, acc.sent_ns,
                                                         acc.connect_ns, acc.done_ns, retries)
            if not again:
                break
        acc.scheduled_ns = scheduled_ns
        acc.retries = retries
        return acc.result()

    def _pool_get(self) -> ConnectionPool:
        if self._pool is None:
            self._pool = ConnectionPool(
                self.base_url, limit=self._connector_limit, connect_s=self.deadlines.connect_s
            )
        return self._pool

    async def _stream_asyncio(self, data: bytes, path: str) -> _Accumulator:
        pool = self._pool_get()
        target = (self._path_prefix + (path if path.startswith("/") else "/" + path)).encode()
        request = (
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
            acc = _Accumulator()
            try:
                # the retry of a request a kept-alive connection lost goes on a new connection: another
                # idle one may have been closed by the server just the same (llama-server closes every
                # connection after a streamed response: docs/engines.md)
                conn, opened_ns = await pool.acquire(fresh=attempt > 0)
            except (TimeoutError, OSError) as e:
                acc.sent_ns = _perf_ns()
                what = "timed out" if isinstance(e, asyncio.TimeoutError) else str(e)
                acc.error = RequestError(kind="connect", message=f"cannot connect to {self.base_url}: {what}")
                return acc
            acc.connect_ns = opened_ns
            clock = pool.clock
            if clock is not None and isinstance(conn, KernelStampedConnection):
                acc.arrival = clock.stamps
            else:
                acc.arrival = _user_stamps(pool.arrival_note)
            sink = _StreamSink(acc, loop.create_future())
            try:
                acc.sent_ns = conn.send(request, sink)
                timer = _DeadlineTimer(loop, conn, sink, self.deadlines)
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

    async def _stream_aiohttp(self, data: bytes, path: str) -> _Accumulator:
        acc = _Accumulator()
        acc.arrival = _AIOHTTP_ARRIVAL
        sent_ns = _perf_ns()
        acc.sent_ns = sent_ns
        try:
            async with self._sess().post(self._url(path), data=data) as resp:
                acc.headers_ns = _perf_ns()
                acc.http_status = resp.status
                if resp.status != 200:
                    acc.retry_after = resp.headers.get("Retry-After")
                    text = (await resp.text(errors="replace"))[:2048]
                    acc.error = RequestError(
                        kind="http_status", message=f"HTTP {resp.status}", http_status=resp.status, body=text
                    )
                    return acc
                ctype = resp.headers.get("Content-Type", "")
                if "text/event-stream" not in ctype:
                    text = (await resp.text(errors="replace"))[:2048]
                    acc.error = _not_sse(ctype, resp.status, text)
                    return acc
                parser = SSEParser()
                reader = resp.content
                loop = asyncio.get_running_loop()
                expiring = "idle_timeout"
                deadlines = self.deadlines
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
                    acc.error = _deadline_error(expiring, deadlines, acc.comments)
                    acc.done_ns = _perf_ns()
                if not acc.finished:
                    tail = parser.flush()
                    if tail:
                        acc.on_events(tail, _perf_ns())
        except TimeoutError:
            acc.error = acc.error or RequestError(kind="timeout", message="no data within the read timeout")
        except aiohttp.ClientConnectorError as e:
            acc.error = RequestError(kind="connect", message=f"cannot connect to {self.base_url}: {e}")
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as e:
            acc.error = acc.error or RequestError(kind="disconnect", message=f"stream broken: {e}")
        except aiohttp.ClientError as e:
            acc.error = acc.error or RequestError(kind="connect", message=f"{type(e).__name__}: {e}")
        acc.end_check()
        return acc


_AIOHTTP_ARRIVAL = ArrivalStamps(source="user", reason="the aiohttp stack (--http-stack aiohttp) reads through "
                                  "its own transport, which keeps no kernel stamps")


def _deadline_error(kind: str, deadlines: Deadlines, comments: int) -> RequestError:
    if kind == "total_timeout":
        return RequestError(kind="total_timeout", message=(
            f"the request ran longer than its total deadline of {deadlines.total_s:g} s (--request-timeout)"))
    return RequestError(kind="idle_timeout", message=(
        f"no generated token for {deadlines.idle_s:g} s (idle deadline, --idle-timeout)"
        + (f"; {comments} keep-alive comments in between" if comments else "")))


@functools.lru_cache(maxsize=16)
def _user_stamps(reason: str | None) -> ArrivalStamps:
    """The (frozen) record of user-space stamps for one reason, made once rather than per request."""
    return ArrivalStamps(source="user", reason=reason)


def _not_sse(ctype: str, status: int, text: str) -> RequestError:
    return RequestError(
        kind="not_openai",
        message=f"expected an SSE stream (text/event-stream), got Content-Type {ctype!r}",
        http_status=status,
        body=text,
    )


class _StreamSink:
    """Feeds one response's bytes, stamped in `data_received`, to the SSE parser and accumulator."""

    __slots__ = ("acc", "ctype", "err_body", "fut", "mode", "parser", "stale")

    def __init__(self, acc: _Accumulator, fut: asyncio.Future[None]) -> None:
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
                    else _not_sse(self.ctype, status, text)
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
                acc.error = _deadline_error("total_timeout" if total_left <= 0 else "idle_timeout", d, acc.comments)
            acc.done_ns = now
        self.conn.close()
        self.sink.resolve()

    def cancel(self) -> None:
        if self.h is not None:
            self.h.cancel()
            self.h = None


class _Accumulator:
    """Mutable state of one stream; turned into a frozen StreamResult at the end."""

    __slots__ = (
        "arrival",
        "chunk_chars",
        "chunk_kernel_ns",
        "chunk_kind",
        "chunk_ns",
        "coalesced",
        "comments",
        "connect_ns",
        "content",
        "done",
        "done_ns",
        "empty",
        "error",
        "finish_reason",
        "first_content_ns",
        "first_event_kernel_ns",
        "first_event_ns",
        "headers_ns",
        "http_status",
        "kernel_ns",
        "model",
        "reasoning",
        "reasoning_field",
        "response_id",
        "retries",
        "retry_after",
        "retry_stopped",
        "scheduled_ns",
        "sent_ns",
        "timings",
        "tools",
        "usage",
    )

    def __init__(self) -> None:
        self.sent_ns = 0
        self.scheduled_ns: int | None = None
        self.connect_ns: int | None = None
        self.first_content_ns: int | None = None
        self.response_id: str | None = None
        self.headers_ns: int | None = None
        self.first_event_ns: int | None = None
        self.done_ns: int | None = None
        self.chunk_ns: list[int] = []
        self.chunk_kernel_ns: list[int] = []
        self.kernel_ns = 0  # the kernel's stamp of the read being handled (0: none)
        self.first_event_kernel_ns: int | None = None
        self.arrival: ArrivalStamps | None = None
        self.chunk_chars: list[int] = []
        self.chunk_kind: list[str] = []
        self.coalesced = 0
        self.empty = 0
        self.comments = 0
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_field: str | None = None
        self.tools: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.timings: dict[str, Any] | None = None
        self.model: str | None = None
        self.http_status: int | None = None
        self.error: RequestError | None = None
        self.done = False
        self.retry_after: str | None = None  # the refusal's Retry-After header
        self.retries: list[RetryAttempt] = []
        self.retry_stopped: str | None = None

    @property
    def finished(self) -> bool:
        return self.done or self.error is not None

    def end_check(self) -> None:
        """The body ended: without [DONE] or a finish_reason that is a broken stream."""
        if self.error is None and not self.done and self.finish_reason is None:
            self.error = RequestError(
                kind="disconnect", message="stream ended before [DONE] or a finish_reason"
            )

    def on_events(self, events: list[bytes | object], now: int, kernel: int = 0) -> None:
        self.kernel_ns = kernel
        if self.first_event_ns is None:
            self.first_event_ns = now
            self.first_event_kernel_ns = kernel or None
        first = True
        for ev in events:
            if not first:
                self.coalesced += 1
            first = False
            if ev is COMMENT:
                self.comments += 1
                continue
            if isinstance(ev, Malformed):
                self.error = RequestError(
                    kind="malformed_sse",
                    message="a line of the stream is not a `data:` field, a comment or another SSE field",
                    body=ev.line[:2048].decode(errors="replace"),
                )
                self.done_ns = now
                return
            assert isinstance(ev, bytes)
            if ev == b"[DONE]":
                self.done = True
                self.done_ns = now
                return
            try:
                obj = decode_json(ev)
            except ValueError:
                self.error = RequestError(
                    kind="malformed_sse",
                    message="a data line is not JSON",
                    body=ev[:2048].decode(errors="replace"),
                )
                self.done_ns = now
                return
            if not isinstance(obj, dict):
                self.error = RequestError(
                    kind="malformed_sse",
                    message="a data line is not a JSON object",
                    body=ev[:2048].decode(errors="replace"),
                )
                self.done_ns = now
                return
            self._on_object(obj, now)
            if self.error is not None:
                self.done_ns = now
                return

    def _on_object(self, obj: dict[str, Any], now: int) -> None:
        if "error" in obj and "choices" not in obj:
            err = obj["error"]
            msg = err.get("message") if isinstance(err, dict) else str(err)
            self.error = RequestError(
                kind="server_error_event", message=str(msg)[:500], body=json.dumps(obj)[:2048]
            )
            return
        if obj.get("usage"):
            self.usage = obj["usage"]
        if obj.get("timings"):
            self.timings = obj["timings"]
        if self.model is None and obj.get("model"):
            self.model = obj["model"]
        if self.response_id is None and obj.get("id"):
            self.response_id = obj["id"]
        choices = obj.get("choices")
        if choices is None:
            if not obj.get("usage"):
                self.error = RequestError(
                    kind="malformed_sse", message="event without `choices`", body=json.dumps(obj)[:2048]
                )
            return
        if not choices:
            return  # usage-only final chunk
        choice = choices[0]
        delta = choice.get("delta") or {}
        n_chars = 0
        kinds = ""
        text = delta.get("content") if delta else choice.get("text")  # chat, or /completions
        if text:
            if self.first_content_ns is None:
                self.first_content_ns = now
            self.content.append(text)
            n_chars += len(text)
            kinds += "c"
        for field in ("reasoning_content", "reasoning"):
            r = delta.get(field)
            if r:
                self.reasoning.append(r)
                self.reasoning_field = field
                n_chars += len(r)
                kinds += "r"
                break
        tcs = delta.get("tool_calls")
        if tcs:
            kinds += "t"
            for tc in tcs:
                self._merge_tool_call(tc)
        if kinds:
            self.chunk_ns.append(now)
            self.chunk_kernel_ns.append(self.kernel_ns)
            self.chunk_chars.append(n_chars)
            self.chunk_kind.append(kinds if len(kinds) == 1 else "m")
        else:
            self.empty += 1
        fr = choice.get("finish_reason")
        if fr:
            self.finish_reason = fr
            # Some servers send usage in a later chunk, then [DONE]; keep reading until [DONE]
            # or the connection closes, which `stream_chat` treats as the end when a
            # finish_reason was seen.

    def _merge_tool_call(self, tc: dict[str, Any]) -> None:
        idx = tc.get("index", len(self.tools))
        cur = self.tools.setdefault(
            idx, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if tc.get("id"):
            cur["id"] = tc["id"]
        if tc.get("type"):
            cur["type"] = tc["type"]
        fn = tc.get("function") or {}
        if fn.get("name"):
            cur["function"]["name"] += fn["name"]
        if fn.get("arguments"):
            cur["function"]["arguments"] += fn["arguments"]

    def _arrival(self) -> tuple[ArrivalStamps | None, list[int]]:
        """The kernel stamps when every chunk has one; else user-space stamps, saying why."""
        arrival, kernel = self.arrival, self.chunk_kernel_ns
        if arrival is None or arrival.source != "kernel":
            return arrival, []
        if 0 in kernel:
            missing = kernel.count(0)
            return ArrivalStamps(source="user", reason=(
                f"{missing} of {len(kernel)} reads came without a kernel timestamp")), []
        return arrival, kernel

    def result(self) -> StreamResult:
        arrival, kernel = self._arrival()
        return StreamResult(
            chunk_kernel_ns=kernel,
            first_event_kernel_ns=self.first_event_kernel_ns if kernel else None,
            arrival=arrival,
            sent_ns=self.sent_ns,
            scheduled_ns=self.scheduled_ns,
            connect_ns=self.connect_ns,
            first_content_ns=self.first_content_ns,
            response_id=self.response_id,
            headers_ns=self.headers_ns,
            first_event_ns=self.first_event_ns,
            done_ns=self.done_ns if self.done_ns is not None else _perf_ns(),
            chunk_ns=self.chunk_ns,
            chunk_chars=self.chunk_chars,
            chunk_kind="".join(self.chunk_kind),
            coalesced_events=self.coalesced,
            empty_events=self.empty,
            comment_events=self.comments,
            content="".join(self.content),
            reasoning="".join(self.reasoning),
            reasoning_field=self.reasoning_field,
            tool_calls=[self.tools[k] for k in sorted(self.tools)],
            finish_reason=self.finish_reason,
            usage=self.usage,
            timings=self.timings,
            model=self.model,
            http_status=self.http_status,
            error=self.error,
            retries=self.retries,
            retry_stopped=self.retry_stopped,
        )
