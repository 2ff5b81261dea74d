"""A TCP proxy that freezes the server once, mid-run: the adversary of coordinated omission.

It forwards bytes both ways unchanged until the `after_requests`-th chat request (a `marker`
in the client's bytes: `POST /v1/chat/completions` by default) reaches it; from then on, for
`stall_s` seconds, nothing passes in either direction (requests already sent wait for their
tokens; new requests, and the connections that carry them, wait to reach the server), then
everything held is released in order. To the client this is a server that stopped for
`stall_s` seconds (a long GC pause, a stuck GPU, a failover), whatever is behind the proxy.

A load tool that waits for a free slot before it sends (a concurrency cap) and times each
request from its actual send hides that stall from the requests that queued behind it; one
that times from the intended start shows it. The stall's window is recorded on
`time.perf_counter_ns()` (CLOCK_MONOTONIC on Linux, the clock of the emulator's truth), so a
benchmark can tell when each byte the server wrote reached the client: at its write, or at
the window's end when it was written during the stall.

In-process: `async with StallProxy(upstream, stall_s=2, after_requests=20) as p: p.url`.
In its own process (a benchmark's set-up): `python -m rigbench.testing._stall --upstream URL
--stall-s 2 --after 20` prints `listening URL`, then `stall START_NS END_NS` when it ends, and on
SIGINT or SIGTERM `arrivals NS...`: when each chat request reached it (`arrivals_ns`), the client's
send as the server would have seen it had it not stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time
from urllib.parse import urlsplit

__all__ = ["StallProxy"]

_READ = 65536


class StallProxy:
    """Forward TCP to `upstream` (a server root or an OpenAI base URL: host and port are used),
    holding all traffic for `stall_s` seconds once the `after_requests`-th `marker` was seen."""

    def __init__(self, upstream: str, *, stall_s: float = 2.0, after_requests: int = 1,
                 marker: bytes = b"POST /v1/chat/completions", host: str = "127.0.0.1",
                 port: int = 0) -> None:
        if stall_s <= 0:
            raise ValueError(f"the stall must last more than 0 s, not {stall_s}")
        if after_requests < 1:
            raise ValueError(f"the stall starts at a request, the first at the earliest; not {after_requests}")
        if not marker:
            raise ValueError("the request marker must not be empty")
        parts = urlsplit(upstream if "//" in upstream else f"http://{upstream}")
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"upstream must name a host and a port, e.g. http://127.0.0.1:8080; not {upstream!r}")
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        self.stall_s, self.after_requests, self.marker = stall_s, after_requests, marker
        self.host, self.port = host, port
        self.requests = 0  # markers seen so far
        self.arrivals_ns: list[int] = []  # when each reached the proxy (the client's send, to the server)
        self.window_ns: tuple[int, int] | None = None  # the stall, once it has ended
        self._started_ns: int | None = None
        self._open = asyncio.Event()
        self._open.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._ended = asyncio.Event()

    @property
    def url(self) -> str:
        """The OpenAI base URL through the proxy, ending in /v1."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def stalling(self) -> bool:
        return not self._open.is_set()

    @staticmethod
    def delivered_ns(written_ns: int, window_ns: tuple[int, int] | None) -> int:
        """When bytes the server wrote at `written_ns` could reach the client through a proxy that
        stalled over `window_ns`: at once, or at the window's end when written during it (the
        proxy's own forwarding, tens of microseconds, is not added)."""
        if window_ns is not None and window_ns[0] <= written_ns < window_ns[1]:
            return window_ns[1]
        return written_ns

    async def start(self) -> StallProxy:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._open.set()  # let held pumps finish writing into closing sockets
        for t in list(self._tasks):
            t.cancel()
        for t in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await t

    async def __aenter__(self) -> StallProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_stall_end(self) -> tuple[int, int]:
        """Wait until the stall has run its course; its window."""
        await self._ended.wait()
        assert self.window_ns is not None
        return self.window_ns

    def _count(self, tail: bytes, data: bytes) -> bytes:
        """Count markers in `data` (a marker may straddle the previous read: `tail`); start the
        stall at the `after_requests`-th. Returns the new tail."""
        joined = tail + data
        seen = joined.count(self.marker)
        if seen:
            self.requests += seen
            self.arrivals_ns.extend([time.perf_counter_ns()] * seen)
        if self._started_ns is None and self.requests >= self.after_requests:
            self._started_ns = time.perf_counter_ns()
            self._open.clear()
            asyncio.get_running_loop().call_later(self.stall_s, self._resume)
        return joined[-(len(self.marker) - 1):] if len(self.marker) > 1 else b""

    def _resume(self) -> None:
        assert self._started_ns is not None
        self.window_ns = (self._started_ns, time.perf_counter_ns())
        self._open.set()
        self._ended.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            try:
                up_r, up_w = await asyncio.open_connection(self.upstream_host, self.upstream_port)
            except OSError:
                writer.close()
                return
            pumps = [asyncio.create_task(self._pump(reader, up_w, count=True)),
                     asyncio.create_task(self._pump(up_r, writer, count=False))]
            try:
                await asyncio.gather(*pumps)
            finally:
                for p in pumps:
                    p.cancel()
                for w in (writer, up_w):
                    w.close()
        finally:
            self._tasks.discard(task)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, count: bool) -> None:
        tail = b""
        try:
            while True:
                data = await src.read(_READ)
                if count and data:
                    tail = self._count(tail, data)
                await self._open.wait()  # held, with everything behind it, while stalling
                if not data:
                    break
                dst.write(data)
                await dst.drain()
            if dst.can_write_eof():
                dst.write_eof()
        except (ConnectionError, OSError):
            pass


async def _serve(args: argparse.Namespace) -> None:
    proxy = await StallProxy(args.upstream, stall_s=args.stall_s, after_requests=args.after,
                             host=args.host, port=args.port).start()
    task = asyncio.current_task()
    assert task is not None
    for sig in (signal.SIGINT, signal.SIGTERM):  # end through the finally below, which prints the arrivals
        asyncio.get_running_loop().add_signal_handler(sig, task.cancel)
    print(f"listening {proxy.url}", flush=True)
    try:
        start, end = await proxy.wait_stall_end()
        print(f"stall {start} {end}", flush=True)
        await asyncio.Event().wait()
    finally:
        print("arrivals " + " ".join(map(str, proxy.arrivals_ns)), flush=True)
        await proxy.stop()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m rigbench.testing._stall", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--upstream", required=True, help="the server, e.g. http://127.0.0.1:8080")
    p.add_argument("--stall-s", type=float, default=2.0)
    p.add_argument("--after", type=int, default=1, help="stall when this many chat requests have arrived")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt, asyncio.CancelledError):
        asyncio.run(_serve(args))


if __name__ == "__main__":
    main()
