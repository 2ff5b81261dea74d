"""The one streaming OpenAI-compatible client. Every suite talks to the server through it.

The per-chunk path stamps `perf_counter_ns()` once per socket read and appends a few ints per
event; everything else (metrics, token accounting) happens later in `rigbench.analysis`.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp

from rigbench.client._records import RequestError, StreamResult
from rigbench.client._sse import COMMENT, SSEParser

__all__ = ["ChatClient"]

_perf_ns = time.perf_counter_ns


class ChatClient:
    """Async client for one OpenAI-compatible base URL (e.g. `http://127.0.0.1:8080/v1`).

    The API key is sent as a bearer token and never stored in any record.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        max_connections: int = 1024,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 600.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._connector_limit = max_connections
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=connect_timeout_s, sock_read=read_timeout_s
        )
        self._session: aiohttp.ClientSession | None = None

    @property
    def server_root(self) -> str:
        """The server's root URL (base URL without a trailing `/v1`), for /health, /metrics..."""
        return self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url

    def _sess(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._connector_limit, force_close=False),
                timeout=self._timeout,
                headers=self._headers,
                auto_decompress=False,
            )
        return self._session

    async def aclose(self) -> None:
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
        return await self._request("GET", url, None, timeout_s)

    async def post_json(self, url: str, body: dict[str, Any], *, timeout_s: float = 600.0) -> tuple[int, Any]:
        return await self._request("POST", url, body, timeout_s)

    async def get_text(self, url: str, *, timeout_s: float = 10.0) -> tuple[int, str]:
        async with self._sess().get(self._url(url), timeout=aiohttp.ClientTimeout(total=timeout_s)) as r:
            return r.status, await r.text(errors="replace")

    def _url(self, url: str) -> str:
        if url.startswith(("http://", "https://")):
            return url
        return self.base_url + (url if url.startswith("/") else "/" + url)

    async def _request(self, method: str, url: str, body: dict[str, Any] | None, timeout_s: float) -> tuple[int, Any]:
        async with self._sess().request(
            method, self._url(url), json=body, timeout=aiohttp.ClientTimeout(total=timeout_s)
        ) as r:
            text = await r.text(errors="replace")
            try:
                return r.status, json.loads(text)
            except ValueError:
                return r.status, text

    # -- the streaming path -----------------------------------------------------------------

    async def stream_chat(self, body: dict[str, Any], *, path: str = "/chat/completions") -> StreamResult:
        """Send one streaming chat completion and record everything it produced.

        Never raises for a failure of the server: that becomes `StreamResult.error`.
        """
        payload = dict(body)
        payload["stream"] = True
        opts = dict(payload.get("stream_options") or {})
        opts.setdefault("include_usage", True)
        payload["stream_options"] = opts
        data = json.dumps(payload).encode()
        acc = _Accumulator()
        sent_ns = _perf_ns()
        acc.sent_ns = sent_ns
        try:
            async with self._sess().post(self._url(path), data=data) as resp:
                acc.headers_ns = _perf_ns()
                acc.http_status = resp.status
                if resp.status != 200:
                    text = (await resp.text(errors="replace"))[:2048]
                    acc.error = RequestError(
                        kind="http_status", message=f"HTTP {resp.status}", http_status=resp.status, body=text
                    )
                    return acc.result()
                ctype = resp.headers.get("Content-Type", "")
                if "text/event-stream" not in ctype:
                    text = (await resp.text(errors="replace"))[:2048]
                    acc.error = RequestError(
                        kind="not_openai",
                        message=f"expected an SSE stream (text/event-stream), got Content-Type {ctype!r}",
                        http_status=resp.status,
                        body=text,
                    )
                    return acc.result()
                parser = SSEParser()
                reader = resp.content
                while not acc.finished:
                    raw = await reader.readany()
                    if not raw:
                        break
                    now = _perf_ns()
                    events = parser.feed(raw)
                    if events:
                        acc.on_events(events, now)
                if not acc.finished:
                    tail = parser.flush()
                    if tail:
                        acc.on_events(tail, _perf_ns())
        except asyncio.TimeoutError:
            acc.error = acc.error or RequestError(kind="timeout", message="no data within the read timeout")
        except aiohttp.ClientConnectorError as e:
            acc.error = RequestError(kind="connect", message=f"cannot connect to {self.base_url}: {e}")
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as e:
            acc.error = acc.error or RequestError(kind="disconnect", message=f"stream broken: {e}")
        except aiohttp.ClientError as e:
            acc.error = acc.error or RequestError(kind="connect", message=f"{type(e).__name__}: {e}")
        if acc.error is None and not acc.done and acc.finish_reason is None:
            acc.error = RequestError(
                kind="disconnect", message="stream ended before [DONE] or a finish_reason"
            )
        return acc.result()


class _Accumulator:
    """Mutable state of one stream; turned into a frozen StreamResult at the end."""

    __slots__ = (
        "chunk_chars",
        "chunk_kind",
        "chunk_ns",
        "coalesced",
        "comments",
        "content",
        "done",
        "done_ns",
        "empty",
        "error",
        "finish_reason",
        "first_event_ns",
        "headers_ns",
        "http_status",
        "model",
        "reasoning",
        "reasoning_field",
        "sent_ns",
        "timings",
        "tools",
        "usage",
    )

    def __init__(self) -> None:
        self.sent_ns = 0
        self.headers_ns: int | None = None
        self.first_event_ns: int | None = None
        self.done_ns: int | None = None
        self.chunk_ns: list[int] = []
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

    @property
    def finished(self) -> bool:
        return self.done or self.error is not None

    def on_events(self, events: list[bytes | object], now: int) -> None:
        if self.first_event_ns is None:
            self.first_event_ns = now
        first = True
        for ev in events:
            if not first:
                self.coalesced += 1
            first = False
            if ev is COMMENT:
                self.comments += 1
                continue
            assert isinstance(ev, bytes)
            if ev == b"[DONE]":
                self.done = True
                self.done_ns = now
                return
            try:
                obj = json.loads(ev)
            except ValueError:
                self.error = RequestError(
                    kind="malformed_sse", message="a data line is not JSON", body=ev[:2048].decode(errors="replace")
                )
                self.done_ns = now
                return
            if not isinstance(obj, dict):
                self.error = RequestError(kind="malformed_sse", message="a data line is not a JSON object",
                                          body=ev[:2048].decode(errors="replace"))
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
            self.error = RequestError(kind="server_error_event", message=str(msg)[:500], body=json.dumps(obj)[:2048])
            return
        if obj.get("usage"):
            self.usage = obj["usage"]
        if obj.get("timings"):
            self.timings = obj["timings"]
        if self.model is None and obj.get("model"):
            self.model = obj["model"]
        choices = obj.get("choices")
        if choices is None:
            if not obj.get("usage"):
                self.error = RequestError(kind="malformed_sse", message="event without `choices`",
                                          body=json.dumps(obj)[:2048])
            return
        if not choices:
            return  # usage-only final chunk
        choice = choices[0]
        delta = choice.get("delta") or {}
        n_chars = 0
        kinds = ""
        text = delta.get("content")
        if text:
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
        cur = self.tools.setdefault(idx, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        if tc.get("id"):
            cur["id"] = tc["id"]
        if tc.get("type"):
            cur["type"] = tc["type"]
        fn = tc.get("function") or {}
        if fn.get("name"):
            cur["function"]["name"] += fn["name"]
        if fn.get("arguments"):
            cur["function"]["arguments"] += fn["arguments"]

    def result(self) -> StreamResult:
        return StreamResult(
            sent_ns=self.sent_ns,
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
        )
