"""Both transports behind the client's one seam (`StreamTransport`), on the real embedded llama-server:
the same greedy answer through each, and each says which arrival stamps it could give."""

from __future__ import annotations

import asyncio
import sys

import pytest

from rigbench.client import AiohttpTransport, ChatClient, StampedTransport, StreamTransport
from rigbench.records import StreamResult

from ..conftest import LiveRig

pytestmark = [pytest.mark.live]

BODY = {"model": "smollm2", "messages": [{"role": "user", "content": "Name three colours."}], "max_tokens": 8,
        "temperature": 0}


def _two(base_url: str, transport: StreamTransport) -> list[StreamResult]:
    async def go() -> list[StreamResult]:
        async with ChatClient(base_url, transport=transport) as c:
            return [await c.stream_chat(BODY) for _ in range(2)]
    return asyncio.run(go())


def test_each_transport_streams_the_same_greedy_answer_with_its_stamps_said(live_rig: LiveRig) -> None:
    """Two requests through each transport on one client (llama-server closes the connection after each
    stream, so the second is sent on a new one): every one answered whole, token by token, the same text
    through both; the default transport reads kernel arrival stamps on plain HTTP (Linux), each at or before
    rigbench's own stamp of that read, and the aiohttp one says user-space stamps and why."""
    stamped = _two(live_rig.info.base_url, StampedTransport())
    plain = _two(live_rig.info.base_url, AiohttpTransport())
    for r in stamped + plain:
        assert r.ok and r.finish_reason == "length", r.error
        assert r.usage is not None and r.usage["completion_tokens"] == 8 and len(r.chunk_ns) >= 4
    assert len({r.content for r in stamped + plain}) == 1, [r.content for r in stamped + plain]
    for r in stamped:
        assert r.arrival is not None
        if sys.platform == "linux":
            assert r.arrival.source == "kernel" and len(r.chunk_kernel_ns) == len(r.chunk_ns), r.arrival
            slack = r.arrival.clock_uncertainty_ns or 0
            assert all(k <= u + slack for k, u in zip(r.chunk_kernel_ns, r.chunk_ns, strict=True))
    for r in plain:
        assert r.arrival is not None and r.arrival.source == "user" and r.chunk_kernel_ns == []
        assert "aiohttp" in (r.arrival.reason or "")
