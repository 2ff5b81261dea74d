"""Kernel arrival stamps: when the kernel received the bytes of a read, not when rigbench saw them.

Linux stamps every received packet (software receive timestamp) and, with `SO_TIMESTAMPNS` set on
a socket, hands the stamp of the last segment a `recvmsg` consumed back as ancillary data
(`SCM_TIMESTAMPNS`, a CLOCK_REALTIME timespec). That stamp is taken before any process runs, so
it does not move when the client is slow or the machine is busy; rigbench's own stamp
(`perf_counter_ns()` when its code first sees the bytes) does. Own stamp - kernel arrival is
therefore exactly how late the client was for that read: its stamping error.

The kernel's clock is CLOCK_REALTIME, the client's is perf_counter (CLOCK_MONOTONIC on Linux).
`ClockOffset` samples their difference: the tightest of a few bracketed readings, whose half
width is the conversion's uncertainty (typically well under a microsecond).
"""

from __future__ import annotations

import platform
import socket
import struct
import sys
import time
from typing import NamedTuple

__all__ = ["ANC_SPACE", "TIMESPEC", "ClockOffset", "enable_kernel_stamps", "kernel_stamps_unavailable"]

# The Python socket module does not name these. asm-generic values (x86-64, arm64, riscv, s390x,
# ppc64): SO_TIMESTAMPNS_OLD = 35 = SCM_TIMESTAMPNS, carrying a native (64-bit on these) timespec.
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_GENERIC_ARCHES = {"x86_64", "amd64", "aarch64", "arm64", "riscv64", "s390x", "ppc64le", "ppc64"}
TIMESPEC = struct.Struct("@qq")
ANC_SPACE = socket.CMSG_SPACE(TIMESPEC.size) if hasattr(socket, "CMSG_SPACE") else 0
_realtime_ns = time.clock_gettime_ns if hasattr(time, "clock_gettime_ns") else None
_perf_ns = time.perf_counter_ns


def kernel_stamps_unavailable() -> str | None:
    """Why this platform cannot give kernel arrival stamps, or None when it can (try the socket)."""
    if sys.platform != "linux":
        return f"kernel receive timestamps are read on Linux only (this is {sys.platform})"
    if platform.machine().lower() not in _GENERIC_ARCHES:
        return f"SO_TIMESTAMPNS layout not known for {platform.machine()}"
    if not ANC_SPACE or _realtime_ns is None or not hasattr(socket.socket, "recvmsg"):
        return "this Python has no recvmsg with ancillary data"
    return None


def enable_kernel_stamps(sock: socket.socket) -> str | None:
    """Ask the kernel to stamp `sock`'s reads; the reason it refused, or None."""
    reason = kernel_stamps_unavailable()
    if reason is not None:
        return reason
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError as e:
        return f"the OS refused SO_TIMESTAMPNS on the response socket: {e}"
    return None


class ClockOffset(NamedTuple):
    """CLOCK_REALTIME - perf_counter, and the half width of the tightest reading (its uncertainty)."""

    offset_ns: int
    uncertainty_ns: int
    sampled_ns: int  # perf_counter when sampled

    @classmethod
    def sample(cls, tries: int = 25) -> ClockOffset:
        assert _realtime_ns is not None
        rt = time.CLOCK_REALTIME
        best: tuple[int, int, int] | None = None
        for _ in range(tries):
            a = _perf_ns()
            r = _realtime_ns(rt)
            b = _perf_ns()
            if best is None or b - a < best[0]:
                best = (b - a, r, (a + b) // 2)
        assert best is not None
        width, r, mid = best
        return cls(offset_ns=r - mid, uncertainty_ns=(width + 1) // 2, sampled_ns=mid)
