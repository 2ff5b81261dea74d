"""A reverse proxy that buffers responses, as gateways do: the adversary of the arrival-pattern check.

- `whole`: each response is read from the upstream to its end, then sent in one write (status,
  headers and body), as nginx does with `proxy_buffering on` for a response that fits its buffers.
- `flush`: the status and headers pass at once; the body is collected and written out every
  `period_ms` (nothing is written in a period that received nothing), as a proxy or server that
  flushes on a timer does.
- `coalesce`: the same, with no period: each write waits a random time drawn from `gap_ms`
  (uniform) or until a random number of SSE events drawn from `events` has come in, whichever is
  first, as a proxy that flushes on a buffer size, on its own load or on an upstream read does.
  Seeded (`seed`), so a test can replay it.

Every other request (models, tokenize, metrics, health) passes through unchanged, so rigbench can
attach through the proxy as it would through a real gateway. Used in-process by tests
(`async with BufferingProxy(upstream, mode="whole") as p: p.url`) and from the command line
(`rigbench proxy --mode flush --period-ms 100 --upstream http://127.0.0.1:8080`,
`rigbench proxy --mode coalesce --gap-ms 20-250 --events 2-16`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Literal

import aiohttp
from aiohttp import web

__all__ = ["BufferingProxy", "ProxyMode"]

ProxyMode = Literal["whole", "flush", "coalesce"]

# Hop-by-hop headers and those the proxy recomputes; never forwarded.
_DROP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "trailer",
                   "upgrade", "proxy-connection", "content-encoding"})


class BufferingProxy:
    """Forward HTTP requests to `upstream` (a server root or an OpenAI base URL: its path is kept off),
    buffering each response body as `mode` says."""

    def __init__(self, upstream: str, *, mode: ProxyMode = "whole", period_ms: float = 100.0,
                 gap_ms: tuple[float, float] = (20.0, 250.0), events: tuple[int, int] = (2, 16),
                 seed: int | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        if mode not in ("whole", "flush", "coalesce"):
            raise ValueError(f"proxy mode must be whole, flush or coalesce, not {mode!r}")
        if period_ms <= 0:
            raise ValueError(f"the flush period must be above 0 ms, not {period_ms}")
        if not 0 < gap_ms[0] <= gap_ms[1]:
            raise ValueError(f"the coalescing gaps must be a range above 0 ms, low to high, not {gap_ms[0]:g}-{gap_ms[1]:g}")
        if not 1 <= events[0] <= events[1]:
            raise ValueError(f"the events per write must be a range of at least 1, low to high, not {events[0]}-{events[1]}")
        root = upstream.rstrip("/")
        self.upstream = root[:-3] if root.endswith("/v1") else root
        self.mode: ProxyMode = mode
        self.period_s = period_ms / 1e3
        self.gap_s = (gap_ms[0] / 1e3, gap_ms[1] / 1e3)
        self.events = events
        self._rng = random.Random(seed)
        self.host, self.port = host, port
        self.requests = 0
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        """The OpenAI base URL through the proxy, ending in /v1."""
        return f"http://{self.host}:{self.port}/v1"

    async def start(self) -> BufferingProxy:
        # A fresh upstream connection per request, as nginx does by default (no upstream keep-alive):
        # a pooled connection the server has already closed failed a request now and then with
        # "Server disconnected" (seen in CI on /tokenize), which is the proxy's fault, not the rig's.
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_read=600),
                                              auto_decompress=False,
                                              connector=aiohttp.TCPConnector(force_close=True))
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> BufferingProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def serve_forever(self) -> None:
        """Serve until cancelled (the command line's loop)."""
        if self._runner is None:
            await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        self.requests += 1
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP}
        body = await request.read()
        try:
            up = await self._session.request(request.method, self.upstream + request.rel_url.raw_path_qs,
                                             headers=headers, data=body or None)
        except aiohttp.ClientError as e:
            return web.json_response({"error": {"message": f"proxy: upstream {self.upstream} failed: {e}"}},
                                     status=502)
        async with up:
            resp = web.StreamResponse(status=up.status, reason=up.reason)
            for k, v in up.headers.items():
                if k.lower() not in _DROP:
                    resp.headers.add(k, v)
            if self.mode == "whole":
                data = await up.read()
                resp.content_length = len(data)
                await resp.prepare(request)
                await resp.write(data)
            elif self.mode == "flush":
                await resp.prepare(request)
                await self._flush_periodically(up, resp)
            else:
                await resp.prepare(request)
                await self._coalesce(up, resp)
            await resp.write_eof()
            return resp

    async def _flush_periodically(self, up: aiohttp.ClientResponse, resp: web.StreamResponse) -> None:
        buf = bytearray()
        ended = asyncio.Event()

        async def pump() -> None:
            try:
                async for data in up.content.iter_any():
                    buf.extend(data)
            finally:
                ended.set()

        task = asyncio.create_task(pump())
        loop = asyncio.get_running_loop()
        tick = loop.time() + self.period_s
        try:
            while not ended.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout_at(tick):
                        await ended.wait()
                if not ended.is_set():
                    tick += self.period_s
                if buf:
                    out = bytes(buf)
                    buf.clear()
                    await resp.write(out)
            await task  # an upstream read error surfaces here
        finally:
            task.cancel()

    async def _coalesce(self, up: aiohttp.ClientResponse, resp: web.StreamResponse) -> None:
        buf = bytearray()
        ended = asyncio.Event()
        grew = asyncio.Event()

        async def pump() -> None:
            try:
                async for data in up.content.iter_any():
                    buf.extend(data)
                    grew.set()
            finally:
                ended.set()
                grew.set()

        task = asyncio.create_task(pump())
        loop = asyncio.get_running_loop()
        try:
            while not ended.is_set():
                due = loop.time() + self._rng.uniform(*self.gap_s)
                enough = self._rng.randint(*self.events)
                while True:
                    grew.clear()  # before looking, so that data arriving after the look wakes the wait
                    if ended.is_set() or buf.count(b"\n\n") >= enough or loop.time() >= due:
                        break
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout_at(due):
                            await grew.wait()
                if buf:
                    out = bytes(buf)
                    buf.clear()
                    await resp.write(out)
            await task  # an upstream read error surfaces here
            if buf:
                await resp.write(bytes(buf))
        finally:
            task.cancel()
