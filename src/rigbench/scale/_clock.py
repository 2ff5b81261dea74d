"""Aligning a client actor's monotonic clock with the driver's, NTP-style.

The driver sends a datagram at t0 (its clock), the actor stamps it on arrival with its own clock
(t1) and echoes it, the driver receives the echo at t3. If the two legs took equally long,
offset = t1 - (t0 + t3) / 2; whatever the legs took, the true offset lies within +-(t3 - t0) / 2 of
that, so half the round trip is the uncertainty. The round with the shortest round trip wins.
UDP echo on the actor's own event loop keeps the round trip near the network's (tens of us on one
machine); where UDP cannot pass, Ray method calls do the same job with a longer round trip.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Callable
from typing import Literal, NamedTuple

from rigbench.records import ClientClock

__all__ = ["ClientClock", "ClockEcho", "ClockSample", "best_sample", "ping_udp"]

_perf_ns = time.perf_counter_ns
_SEQ = struct.Struct("!q")
_REPLY = struct.Struct("!qq")


class ClockSample(NamedTuple):
    offset_ns: int  # actor clock minus driver clock
    uncertainty_ns: int  # half the round trip
    rtt_ns: int
    samples: int
    method: Literal["udp", "ray"]


class ClockEcho(asyncio.DatagramProtocol):
    """The actor's side: stamp each datagram on arrival and send it back with the stamp."""

    def __init__(self, now_ns: Callable[[], int], delay_s: float = 0.0) -> None:
        self._now = now_ns
        self._delay = delay_s  # tests only: a slow echo, to play an actor whose clock cannot be pinned
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        stamp = self._now()
        reply = data[: _SEQ.size] + _SEQ.pack(stamp)
        if self.transport is None:
            return
        if self._delay > 0:
            asyncio.get_running_loop().call_later(self._delay, self.transport.sendto, reply, addr)
        else:
            self.transport.sendto(reply, addr)


def best_sample(rounds: list[tuple[int, int, int]], method: Literal["udp", "ray"]) -> ClockSample:
    """From (t0, t_actor, t3) rounds, the one with the shortest round trip."""
    t0, t1, t3 = min(rounds, key=lambda r: r[2] - r[0])
    rtt = t3 - t0
    return ClockSample(offset_ns=t1 - (t0 + t3) // 2, uncertainty_ns=(rtt + 1) // 2, rtt_ns=rtt,
                       samples=len(rounds), method=method)


def ping_udp(host: str, port: int, rounds: int, *, timeout_s: float = 0.5) -> ClockSample | None:
    """`rounds` echo round trips to an actor's ClockEcho (blocking; run it in a thread). None: none came back."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    got: list[tuple[int, int, int]] = []
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout_s)
        s.connect((host, port))
        for i in range(rounds):
            seq = _SEQ.pack(i)
            t0 = _perf_ns()
            s.send(seq)
            try:
                while True:
                    data = s.recv(64)
                    t3 = _perf_ns()
                    if len(data) == _REPLY.size and data[: _SEQ.size] == seq:
                        break  # an older, late echo is skipped
            except OSError:  # timeout, or the port is unreachable
                continue
            got.append((t0, _REPLY.unpack(data)[1], t3))
    return best_sample(got, "udp") if got else None
