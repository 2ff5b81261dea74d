"""The one streaming OpenAI-compatible client. Every suite talks to the server through it.

A streamed request goes through the client's one `StreamTransport` (`_transport.py`), chosen when the
client is built: `StampedTransport` by default (stamps each socket read in the first Python code that
sees it, see `_http.py` for why not aiohttp there). The client encodes the body, retries what its
`RetryPolicy` covers and notes the send lag (`records.send_lag_ns`, the one formula); the transport fills an `Accumulator` per attempt.
Plain JSON calls (/models, /tokenize, /metrics...) go through aiohttp.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any, NamedTuple

import aiohttp

from rigbench.client._deadlines import Deadlines
from rigbench.client._retry import RetryPolicy
from rigbench.client._selfcheck import current_monitor
from rigbench.client._stamped import StampedTransport
from rigbench.client._transport import StreamRequest, StreamTransport
from rigbench.records import RetryAttempt, StreamResult, send_lag_ns

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
    sent again (`RetryPolicy`: none by default); `transport` carries every streamed request
    (`StampedTransport` unless given: see `_transport.py`).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        max_connections: int = 1024,
        deadlines: Deadlines | None = None,
        transport: StreamTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._connector_limit = max_connections
        self._session: aiohttp.ClientSession | None = None
        self.deadlines = deadlines if deadlines is not None else Deadlines()
        self.retries = RetryPolicy()
        # the streaming path, chosen once (benchmarks/client_overhead.py chose the default)
        self.transport = transport if transport is not None else StampedTransport()
        self.transport.bind(self)

    @property
    def max_connections(self) -> int:
        return self._connector_limit

    @property
    def authorization(self) -> str | None:
        """The Authorization header the requests carry (None without an API key): for the transport."""
        return self._headers.get("Authorization")

    def configure(self, *, deadlines: Deadlines | None = None, max_connections: int | None = None,
                  retries: RetryPolicy | None = None) -> None:
        """Set the per-request deadlines, the connection limit and the retry policy before the first request."""
        if retries is not None:
            self.retries = retries
        opened = self.transport.opened or self._session is not None
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

    def aiohttp_session(self) -> aiohttp.ClientSession:
        """The aiohttp session of the plain JSON calls (and of `AiohttpTransport`), opened on first use."""
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
        await self.transport.aclose()
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
            again, stopped = await self.retries.after_attempt(r.status, r.retry_after, r.sent_ns, None, r.done_ns,
                                                              retries)
            if not again:
                return r._replace(retries=tuple(retries), retry_stopped=stopped)

    async def get_text(self, url: str, *, timeout_s: float = 10.0) -> tuple[int, str]:
        async with self.aiohttp_session().get(self.url(url), timeout=aiohttp.ClientTimeout(total=timeout_s)) as r:
            return r.status, await r.text(errors="replace")

    def url(self, url: str) -> str:
        """An absolute URL as it is; a path, under the base URL."""
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
        async with self.aiohttp_session().request(
            method, self.url(url), json=body, timeout=aiohttp.ClientTimeout(total=timeout_s)
        ) as r:
            text = await r.text(errors="replace")
            data: Any = text
            with contextlib.suppress(ValueError):  # not JSON: the text, as the server sent it
                data = json.loads(text)
            return JsonReply(r.status, data, sent_ns, _perf_ns(), r.headers.get("Retry-After"))

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
        request = StreamRequest(path, (body if isinstance(body, EncodedBody) else self.encode_stream(body)).data)
        if scheduled_ns is None:
            scheduled_ns = _perf_ns()
        retries: list[RetryAttempt] = []
        transport = self.transport
        while True:
            acc = await transport.handle_stream(request)
            mon = current_monitor()
            if mon is not None and acc.sent_ns and not retries:  # a retry goes out when its wait ends, by design
                mon.note_send_lag(send_lag_ns(scheduled_ns, acc.sent_ns, acc.connect_ns))
            again, acc.retry_stopped = await self.retries.after_attempt(acc.http_status, acc.retry_after, acc.sent_ns,
                                                                        acc.connect_ns, acc.done_ns, retries)
            if not again:
                break
        acc.scheduled_ns = scheduled_ns
        acc.retries = retries
        return acc.result()
