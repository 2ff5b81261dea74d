"""A minimal HTTP/1.1 client for the streaming path, on a bare `asyncio.Protocol`.

Why not aiohttp here (benchmarks/client_overhead.py has the numbers, docs/benchmarks.md the
record): a streamed event through aiohttp costs a coroutine wake-up and a StreamReader hop, and
its timestamp is taken when the reading task resumes, after every other callback of that loop
iteration has run. Here the stamp is taken in `data_received`, the first Python code that sees
the bytes, the SSE events are handled right there, and the waiting task wakes once per request.

Only what OpenAI-compatible servers need: one request per connection at a time, keep-alive
reuse, chunked / Content-Length / close-delimited bodies, optional TLS. No proxies, no redirects.

Kernel arrival stamps (`_arrival.py`): on Linux, a plain-HTTP connection is read by
`KernelStampedConnection`, which owns its socket, waits for it with `loop.add_reader` and reads
it with `recvmsg`, so each read also carries the kernel's receive time of its last segment (the
Protocol API hands over bytes only). TLS, other OSes and a socket that refuses the option use
the Protocol path and user-space stamps; `ConnectionPool.arrival_note` says why.
"""

from __future__ import annotations

import asyncio
import socket
import ssl as _ssl
import time
from collections.abc import Callable
from typing import Protocol, cast
from urllib.parse import urlsplit

from rigbench.client._arrival import (
    ANC_SPACE,
    TIMESPEC,
    ClockOffset,
    enable_kernel_stamps,
    kernel_stamps_unavailable,
)
from rigbench.records import ArrivalStamps

__all__ = ["BodySink", "ConnectionPool", "HttpConnection", "KernelStampedConnection", "ReadQueue", "ResponseHead"]

_perf_ns = time.perf_counter_ns
_unpack_timespec = TIMESPEC.unpack_from


class ResponseHead:
    __slots__ = ("content_type", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self.headers = headers
        self.content_type = headers.get("content-type", "")


class BodySink(Protocol):
    """Receives one response, in `data_received` order, every call stamped with its arrival."""

    def on_head(self, head: ResponseHead, now_ns: int) -> None: ...
    # kernel_ns: the kernel's arrival stamp of the read (perf_counter clock), 0 when unknown
    def on_body(self, data: bytes, now_ns: int, kernel_ns: int) -> bool: ...  # True: stop, close
    def on_end(self, exc: BaseException | None, now_ns: int) -> None: ...  # body ended or broke


_HEAD, _BODY, _IDLE = 0, 1, 2

# Stamp every ready socket before parsing any (see HttpConnection.data_received)? Off: on the
# machines measured so far (docs/benchmarks.md) deferring cost CPU (an extra loop iteration per
# read batch) and did not lower the stamp error; no same-machine A/B exists yet. A module switch
# so benchmarks/timing_accuracy.py and client_overhead.py can measure both ways (--inline-parse
# / default) in one run.
DEFER_PARSE = False

# A read that is exactly one whole chunk of a chunked body (a streamed token, the common case
# under paced load: one read per wake-up) is cut out directly instead of going through the
# general decoder. A module switch so benchmarks/client_overhead.py can A/B it in one run.
FAST_PATH = True

# Read plain-HTTP responses with recvmsg and kernel arrival stamps (Linux). A module switch so
# benchmarks/timing_accuracy.py and client_overhead.py can compare both ways in one run.
KERNEL_STAMPS = True
# 64 KiB: CPython allocates the whole size for each recvmsg, and above glibc's mmap threshold
# (128 KiB) every read would map and unmap it (measured: 8.5 us per read at 64 KiB, 28.8 at 256).
_RECV_BYTES = 65536
# A response's status line and headers larger than this are refused (real servers send well under 8 KiB).
_MAX_HEAD_BYTES = 65536


class ArrivalClock:
    """The realtime -> perf_counter conversion shared by a pool's connections, re-sampled when stale;
    `stamps` is its (frozen) record, made once per sample rather than per request."""

    __slots__ = ("offset_ns", "sampled_ns", "stamps", "uncertainty_ns")
    MAX_AGE_NS = 500_000_000  # NTP slews realtime by at most 0.5 ms/s: keep the drift ~microseconds

    def __init__(self) -> None:
        self.offset_ns = self.uncertainty_ns = self.sampled_ns = 0
        self.refresh()

    def refresh(self) -> None:
        c = ClockOffset.sample()
        self.offset_ns, self.uncertainty_ns, self.sampled_ns = c
        self.stamps = ArrivalStamps(source="kernel", clock_offset_ns=c.offset_ns, clock_uncertainty_ns=c.uncertainty_ns)

    def fresh(self, now_ns: int) -> None:
        if now_ns - self.sampled_ns > self.MAX_AGE_NS:
            self.refresh()


class ReadQueue:
    """Reads stamped in data_received, handled together once the loop has done its other reads."""

    __slots__ = ("items", "loop", "scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: list[tuple[HttpConnection, bytes | None, int, int, BaseException | None]] = []
        self.scheduled = False

    def push(
        self, conn: HttpConnection, data: bytes | None, now: int, exc: BaseException | None = None, kernel: int = 0
    ) -> None:
        self.items.append((conn, data, now, kernel, exc))
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self.scheduled = False
        items, self.items = self.items, []
        for conn, data, now, kernel, exc in items:
            conn.kernel_ns = kernel
            try:
                conn.on_read(data, now, exc)
            except Exception as e:  # a response we cannot parse fails its request, not the others
                conn.fail(e, now)


class HttpConnection(asyncio.Protocol):
    """One keep-alive connection. `send()` writes a request; the reply goes to a BodySink."""

    def __init__(self, on_idle: Callable[[HttpConnection], None], reads: ReadQueue) -> None:
        self._reads = reads
        self.transport: asyncio.Transport | None = None
        self._on_idle = on_idle
        self._sink: BodySink | None = None
        self._state = _IDLE
        self._buf = b""
        self._mode = ""  # "chunked" | "length" | "close"
        self._left = 0  # bytes left of the current chunk (chunked) or of the body (length)
        self._crlf = False  # a chunk's trailing CRLF is still to come
        self.closed = False
        self.keep_alive = True
        self.got_bytes = False  # any byte of the current response
        self.last_ns = 0
        self.kernel_ns = 0  # the kernel's arrival stamp of the read being handled (0: unknown)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def send(self, request: bytes, sink: BodySink) -> int:
        """Write the request; returns the perf_counter_ns stamp taken just before the write."""
        assert self._state == _IDLE
        self._sink = sink
        self._state = _HEAD
        self._buf = b""
        self.got_bytes = False
        now = _perf_ns()
        self.last_ns = now
        self._write(request, now)
        return now

    def _write(self, request: bytes, now: int) -> None:
        assert self.transport is not None
        self.transport.write(request)

    def usable(self) -> bool:
        """Open, and fit to carry the next request."""
        return not self.closed and self.transport is not None and not self.transport.is_closing()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        # The stamp is taken here, the first Python code that sees the bytes. With DEFER_PARSE the
        # parsing waits until every socket ready in this loop iteration has been read and stamped.
        now = _perf_ns()
        self.last_ns = now
        self.got_bytes = True
        if DEFER_PARSE:
            self._reads.push(self, data, now)
        elif self._state == _BODY:
            self._body(data, now)
        else:
            self.on_read(data, now, None)

    def on_read(self, data: bytes | None, now: int, exc: BaseException | None) -> None:
        """A read (or, with data None, the loss of the connection), in arrival order."""
        if data is None:
            self._lost(exc, now)
        elif self._state == _BODY:
            self._body(data, now)
        elif self._state == _HEAD:
            self._head(data, now)
        # bytes on an idle connection: the server broke the protocol; the next send will fail

    def _head(self, data: bytes, now: int) -> None:
        buf = self._buf + data if self._buf else data
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > _MAX_HEAD_BYTES:  # a server sending headers without end: bounded, not buffered forever
                self.fail(ValueError(f"the response head passed {_MAX_HEAD_BYTES // 1024} KiB without ending"), now)
                return
            self._buf = buf
            return
        self._buf = b""
        lines = buf[:end].decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            self.fail(ValueError(f"not an HTTP response: {lines[0][:80]!r}"), now)
            return
        headers: dict[str, str] = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        te = headers.get("transfer-encoding", "").lower()
        if "chunked" in te:
            self._mode, self._left, self._crlf = "chunked", 0, False
        elif "content-length" in headers:
            self._mode, self._left = "length", int(headers["content-length"])
        else:
            self._mode = "close"
        self.keep_alive = headers.get("connection", "").lower() != "close" and self._mode != "close"
        self._state = _BODY
        assert self._sink is not None
        self._sink.on_head(ResponseHead(status, headers), now)
        rest = buf[end + 4 :]
        if self._state != _BODY:
            return
        if rest or (self._mode == "length" and self._left == 0):
            self._body(rest, now)

    def _body(self, data: bytes, now: int) -> None:
        sink = self._sink
        assert sink is not None
        if self._mode == "chunked":
            payload = self._one_chunk(data) if FAST_PATH and not (self._left or self._crlf or self._buf) else None
            if payload is not None:
                ended = False
            else:
                payload, ended = self._dechunk(data)
        elif self._mode == "length":
            payload = data[: self._left]
            self._left -= len(payload)
            ended = self._left == 0
        else:
            payload, ended = data, False
        if payload and sink.on_body(payload, now, self.kernel_ns):
            self._finish(None, now, reuse=False)
            return
        if ended:
            self._finish(None, now, reuse=self.keep_alive)

    @staticmethod
    def _one_chunk(data: bytes) -> bytes | None:
        """The payload when `data` is exactly one whole non-empty chunk (`size CRLF payload CRLF`)."""
        nl = data.find(b"\r\n", 0, 18)
        if nl <= 0:
            return None
        try:
            size = int(data[:nl], 16)
        except ValueError:  # a chunk extension: the general decoder handles it
            return None
        if size <= 0 or len(data) != nl + size + 4 or not data.endswith(b"\r\n"):
            return None
        return data[nl + 2 : -2]

    def _dechunk(self, data: bytes) -> tuple[bytes, bool]:
        buf = self._buf + data if self._buf else data
        out: list[bytes] = []
        i, n = 0, len(buf)
        while True:
            if self._left:
                take = min(self._left, n - i)
                out.append(buf[i : i + take])
                i += take
                self._left -= take
                if self._left:
                    break
                self._crlf = True
            if self._crlf:
                if n - i < 2:
                    break
                i += 2
                self._crlf = False
            nl = buf.find(b"\r\n", i)
            if nl < 0:
                break
            size = int(buf[i:nl].split(b";", 1)[0], 16)
            i = nl + 2
            if size == 0:
                self._buf = b""
                return b"".join(out), True  # trailers, if any, are ignored
            self._left = size
        self._buf = buf[i:]
        return (out[0] if len(out) == 1 else b"".join(out)), False

    def _finish(self, exc: BaseException | None, now: int, *, reuse: bool) -> None:
        sink, self._sink = self._sink, None
        self._state = _IDLE
        self._buf = b""
        if not reuse:
            self.close()
        if sink is not None:
            sink.on_end(exc, now)
        if reuse and not self.closed:
            self._on_idle(self)

    def fail(self, exc: BaseException, now: int) -> None:
        """End the current response with `exc` and close the connection."""
        if self._sink is not None:
            self._finish(exc, now, reuse=False)
        else:
            self.close()

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.transport = None
        if DEFER_PARSE:
            self._reads.push(self, None, _perf_ns(), exc)  # after the reads still queued
        else:
            self._lost(exc, _perf_ns())

    def _lost(self, exc: BaseException | None, now: int) -> None:
        if self._sink is not None:
            if self._state == _BODY and self._mode == "close":
                self._finish(None, now, reuse=False)
            else:
                self.fail(exc or ConnectionResetError("the server closed the connection"), now)


class KernelStampedConnection(HttpConnection):
    """A plain-HTTP connection that owns its socket and reads it with `recvmsg`, so that every read
    carries the kernel's arrival stamp next to rigbench's own (see the module docstring)."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop,
                 on_idle: Callable[[HttpConnection], None], reads: ReadQueue, clock: ArrivalClock) -> None:
        super().__init__(on_idle, reads)
        self.sock: socket.socket | None = sock
        self._loop = loop
        self._fd = sock.fileno()
        self._clock = clock
        self._recvmsg = sock.recvmsg
        self._out = b""
        loop.add_reader(self._fd, self._readable)

    def usable(self) -> bool:
        """Open, and not closed by the server: its FIN may sit in the socket before the loop has read it
        (llama-server closes each connection right after a streamed response), and a request written
        then is lost."""
        if self.closed or self.sock is None:
            return False
        try:
            self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return True  # nothing to read: still open
        except OSError:
            pass
        # EOF, or bytes on an idle connection (the server broke the protocol): not fit for a request
        self._shut()
        return False

    def _write(self, request: bytes, now: int) -> None:
        assert self.sock is not None
        try:
            n = self.sock.send(request)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as e:
            self._loop.call_soon(self.fail, e, now)  # after send() has returned its stamp
            return
        if n < len(request):
            self._out = request[n:]
            self._loop.add_writer(self._fd, self._writable)

    def _writable(self) -> None:
        if self.sock is None:
            return
        try:
            n = self.sock.send(self._out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._peer_gone(e)
            return
        self._out = self._out[n:]
        if not self._out:
            self._loop.remove_writer(self._fd)

    def _readable(self) -> None:
        # The own stamp first, as data_received takes it on the Protocol path; the kernel's comes
        # with the bytes.
        now = _perf_ns()
        try:
            data, anc, _, _ = self._recvmsg(_RECV_BYTES, ANC_SPACE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._peer_gone(e)
            return
        if not data:
            self._peer_gone(None)
            return
        if anc:  # one control message: the only option set on this socket
            sec, nsec = _unpack_timespec(anc[0][2])
            kernel = sec * 1_000_000_000 + nsec - self._clock.offset_ns
        else:
            kernel = 0
        self.kernel_ns = kernel
        self.last_ns = now
        self.got_bytes = True
        if DEFER_PARSE:
            self._reads.push(self, data, now, None, kernel)
            return
        try:
            if self._state == _BODY:
                self._body(data, now)
            else:
                self.on_read(data, now, None)
        except Exception as e:  # a response we cannot parse fails its request (as the Protocol path does)
            self.fail(e, now)

    def _peer_gone(self, exc: BaseException | None) -> None:
        """EOF or a socket error: what connection_lost does on the Protocol path."""
        self._shut()
        now = _perf_ns()
        if DEFER_PARSE:
            self._reads.push(self, None, now, exc)
        else:
            self._lost(exc, now)

    def _shut(self) -> None:
        self.closed = True
        sock, self.sock = self.sock, None
        if sock is not None:
            self._loop.remove_reader(self._fd)
            if self._out:
                self._loop.remove_writer(self._fd)
                self._out = b""
            sock.close()

    def close(self) -> None:
        was_open = self.sock is not None
        self._shut()
        if was_open and self._sink is not None:  # closed under a live response (a deadline, a cancel)
            self._loop.call_soon(self._lost, None, _perf_ns())


def _no_kernel_stamps(https: bool) -> str | None:
    if https:
        return "TLS (https): the SSL transport reads the socket, and it keeps no kernel stamps"
    if not KERNEL_STAMPS:
        return "kernel stamps switched off (rigbench.client._http.KERNEL_STAMPS)"
    return kernel_stamps_unavailable()


class ConnectionPool:
    """Keep-alive connections to one origin, at most `limit` open at once."""

    def __init__(self, url: str, *, limit: int, connect_s: float) -> None:
        u = urlsplit(url)
        self.https = u.scheme == "https"
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or (443 if self.https else 80)
        self.host_header = u.netloc
        self.connect_s = connect_s  # the connect deadline (`Deadlines.connect_s`)
        self._sem = asyncio.Semaphore(limit)
        self._idle: list[HttpConnection] = []
        self._ssl: _ssl.SSLContext | None = _ssl.create_default_context() if self.https else None
        self._reads = ReadQueue(asyncio.get_running_loop())
        # Why this pool's reads carry user-space stamps only; None while kernel stamps are in use.
        self.arrival_note: str | None = _no_kernel_stamps(self.https)
        self.clock: ArrivalClock | None = ArrivalClock() if self.arrival_note is None else None

    async def acquire(self, *, fresh: bool = False) -> tuple[HttpConnection, int | None]:
        """A ready connection and, when a new one had to be opened, the stamp its opening began;
        `fresh`: always a new one (the retry of a request a kept-alive connection lost)."""
        await self._sem.acquire()
        try:
            if self.clock is not None:
                self.clock.fresh(_perf_ns())
            while self._idle and not fresh:
                c = self._idle.pop()
                if c.usable():
                    return c, None
                c.close()
            opened_ns = _perf_ns()
            return await self.open(), opened_ns
        except BaseException:
            self._sem.release()
            raise

    async def open(self) -> HttpConnection:
        loop = asyncio.get_running_loop()
        if self.clock is not None:
            async with asyncio.timeout(self.connect_s):
                stamped = await self._open_stamped(loop, self.clock)
            if stamped is not None:
                return stamped
        # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the result when a cancel
        # (Ctrl-C) lands as the connection completes, and the run went on to exit 0 as complete.
        async with asyncio.timeout(self.connect_s):
            transport, proto = await loop.create_connection(
                lambda: HttpConnection(self._to_idle, self._reads), self.host, self.port, ssl=self._ssl
            )
        if proto.transport is None:  # uvloop may call connection_made a little later
            proto.transport = cast(asyncio.Transport, transport)
        return proto

    async def _open_stamped(self, loop: asyncio.AbstractEventLoop, clock: ArrivalClock) -> HttpConnection | None:
        """A connection read with kernel stamps; None (and `arrival_note` set) when the OS refuses."""
        infos = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        error: OSError = OSError(f"no address for {self.host}:{self.port}")
        for family, kind, proto, _, addr in infos:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                refused = enable_kernel_stamps(sock)
                if refused is not None:
                    sock.close()
                    self.arrival_note, self.clock = refused, None
                    return None
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                await loop.sock_connect(sock, addr)
            except OSError as e:
                sock.close()
                error = e
                continue
            except BaseException:
                sock.close()
                raise
            return KernelStampedConnection(sock, loop, self._to_idle, self._reads, clock)
        raise error

    def release(self, conn: HttpConnection) -> None:
        """The caller is done with `conn`; it goes back to the pool by itself once its body ends."""
        self._sem.release()

    def _to_idle(self, conn: HttpConnection) -> None:
        self._idle.append(conn)

    def close(self) -> None:
        for c in self._idle:
            c.close()
        self._idle.clear()
