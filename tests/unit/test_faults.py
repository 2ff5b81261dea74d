"""Every scripted fault becomes the right error record; the run goes on; nothing completed is lost."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rigbench.client import ChatClient, Deadlines
from rigbench.records import SpeedRequest
from rigbench.store import RunHeader, RunReader, RunWriter
from rigbench.testing import Delay, Emulator, EmulatorScript, Fault

FAST = EmulatorScript(ttft=Delay(mean_ms=1), itl=Delay(mean_ms=0.5), output_tokens=8)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(FAST) as e:
        yield e


def _with(*faults: Fault, **script: object) -> dict[str, object]:
    return {**BODY, "x_emulator": {"faults": [f.model_dump() for f in faults], **script}}


@pytest.mark.parametrize("status", [400, 429, 500, 503])
async def test_http_status(emu: Emulator, status: int) -> None:
    async with ChatClient(emu.url) as c:
        r = await c.stream_chat(_with(Fault(kind="http_status", status=status, message="overloaded")))
        assert r.error is not None and r.error.kind == "http_status" and r.error.http_status == status
        assert r.http_status == status and "overloaded" in (r.error.body or "")
        assert (await c.stream_chat(BODY)).ok  # the connection (kept alive) still serves


async def test_mid_stream_disconnect_keeps_what_arrived(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        r = await c.stream_chat(_with(Fault(kind="disconnect", at_token=3)))
        assert r.error is not None and r.error.kind == "disconnect"
        assert len(r.chunk_ns) == 3 and r.content == "the cat sat "
        assert (await c.stream_chat(BODY)).ok


async def test_malformed_json_line(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        r = await c.stream_chat(_with(Fault(kind="malformed", at_token=2)))
        assert r.error is not None and r.error.kind == "malformed_sse" and "oops" in (r.error.body or "")
        assert len(r.chunk_ns) == 2
        assert (await c.stream_chat(BODY)).ok


async def test_error_event_in_stream(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        r = await c.stream_chat(_with(Fault(kind="error_event", at_token=4, message="KV cache full")))
    assert r.error is not None and r.error.kind == "server_error_event" and r.error.message == "KV cache full"
    assert len(r.chunk_ns) == 4


async def test_stall_beyond_read_timeout_is_a_timeout(emu: Emulator) -> None:
    async with ChatClient(emu.url, deadlines=Deadlines(read_s=0.1)) as c:
        r = await c.stream_chat(_with(Fault(kind="stall", at_token=2, stall_ms=400)))
    assert r.error is not None and r.error.kind == "timeout" and len(r.chunk_ns) == 2


async def test_stall_with_keepalives_survives_and_shows_as_one_long_gap(emu: Emulator) -> None:
    async with ChatClient(emu.url, deadlines=Deadlines(read_s=0.1)) as c:
        r = await c.stream_chat(_with(Fault(kind="stall", at_token=2, stall_ms=300), keepalive_ms=30))
    assert r.ok and r.comment_events >= 5
    gaps = [b - a for a, b in zip(r.chunk_ns, r.chunk_ns[1:], strict=False)]
    assert max(gaps) == gaps[1] and gaps[1] >= 300_000_000


async def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        async with ChatClient(f"http://127.0.0.1:{port}/v1") as c:
            r = await c.stream_chat(BODY)
    assert r.error is not None and r.error.kind == "connect"


async def test_stale_kept_alive_connection_is_retried_once(emu: Emulator) -> None:
    async with ChatClient(emu.url) as c:
        assert (await c.stream_chat(BODY)).ok
        emu.drop_connections()
        await asyncio.sleep(0.02)
        r = await c.stream_chat(BODY)
    assert r.ok and r.connect_ns is not None


async def test_mixed_faults_lose_no_completed_record(emu: Emulator, tmp_path: Path) -> None:
    faults = [
        Fault(kind="http_status", every=5, offset=1, status=500),
        Fault(kind="disconnect", every=5, offset=2, at_token=4),
        Fault(kind="malformed", every=5, offset=3, at_token=1),
        Fault(kind="error_event", every=5, offset=4, at_token=6),
    ]
    emu.script = FAST.model_copy(update={"faults": faults})
    writer = RunWriter(tmp_path / "run", RunHeader(run_id="t", created_at="2026-11-29T00:00:00+00:00",
                                                   rigbench_version="test"))
    async with ChatClient(emu.url) as c:

        async def one(i: int) -> None:
            r = await c.stream_chat(BODY)
            writer.append(SpeedRequest(
                unit_id=f"speed/x/c50/r0/i{i}", scenario="x", concurrency=50, repetition=0, warmup=False,
                index=i, input_tokens_target=1, output_tokens_target=8, input_tokens_measured=None, result=r))

        await asyncio.gather(*[one(i) for i in range(50)])
    writer.finish("complete")
    recs = RunReader(tmp_path / "run").records("speed_request", SpeedRequest)
    assert len(recs) == 50
    kinds: dict[str, int] = {}
    for rec in recs:
        k = rec.result.error.kind if rec.result.error else "ok"
        kinds[k] = kinds.get(k, 0) + 1
    assert kinds == {"ok": 10, "http_status": 10, "disconnect": 10, "malformed_sse": 10,
                     "server_error_event": 10}
    truth = emu.truth_by_id()
    for rec in recs:
        if rec.result.ok:
            assert rec.result.usage and rec.result.usage["completion_tokens"] == 8
            assert truth[rec.result.response_id or ""].fault is None
