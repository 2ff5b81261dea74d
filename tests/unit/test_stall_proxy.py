"""The stall proxy (rigbench.testing.StallProxy): the server behind it stops once, mid-run, for a
set time (coordinated omission's adversary in benchmarks/peers.py). What it must do, judged by
ordering against the emulator's own truth stamps, not by how fast this machine is:
- until the stall, bytes pass unchanged both ways (the healthy control);
- the request that starts it, and any sent during it, reach the server only after it ends;
- tokens the server wrote during it reach the client only after it ends, none before;
- its window is recorded on the truth's clock, and `delivered_ns` maps a write to its delivery.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from rigbench.analysis import arrival_ns
from rigbench.client import ChatClient
from rigbench.testing import Delay, Emulator, EmulatorScript, StallProxy

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
FAST = EmulatorScript(ttft=Delay(mean_ms=5.0), itl=Delay(mean_ms=2.0), output_tokens=8)


def test_bytes_pass_unchanged_until_the_stall_and_nothing_stalls_short_of_the_count() -> None:
    async def go() -> None:
        async with Emulator(FAST) as emu, StallProxy(emu.url, stall_s=5.0, after_requests=4) as p:
            async with ChatClient(p.url) as c:
                proxied = [await c.stream_chat({**BODY, "max_tokens": 8}) for _ in range(3)]
            async with ChatClient(emu.url) as c:
                direct = await c.stream_chat({**BODY, "max_tokens": 8})
            assert all(r.ok for r in proxied), [r.error for r in proxied]
            for r in proxied:
                assert (len(r.chunk_ns), len(r.content), r.finish_reason, r.usage) == (
                    len(direct.chunk_ns), len(direct.content), direct.finish_reason, direct.usage)
            assert [t.received_ns < r.sent_ns for t, r in zip(emu.truth, proxied, strict=False)] == [False] * 3
            assert p.requests == 3 and not p.stalling and p.window_ns is None
    asyncio.run(go())


def test_the_request_that_starts_the_stall_reaches_the_server_only_after_it() -> None:
    async def go() -> None:
        async with Emulator(FAST) as emu, StallProxy(emu.url, stall_s=0.4, after_requests=2) as p:
            async with ChatClient(p.url) as c:
                first = await c.stream_chat({**BODY, "max_tokens": 8})
                second = await c.stream_chat({**BODY, "max_tokens": 8})
            assert first.ok and second.ok, (first.error, second.error)
            start, end = await asyncio.wait_for(p.wait_stall_end(), 10)
            assert end - start >= 0.4e9
            before, after = emu.truth
            assert before.received_ns < start  # the first passed untouched
            assert after.received_ns >= end  # held at the proxy for the whole stall
            assert len(p.arrivals_ns) == 2 and p.arrivals_ns[0] <= before.received_ns
            assert second.sent_ns <= p.arrivals_ns[1] <= start  # it reached the proxy at its send
            first_token = arrival_ns(second)[0][0]
            assert first_token >= end and first_token - second.sent_ns >= 0.4e9
    asyncio.run(go())


def test_tokens_written_during_the_stall_reach_the_client_after_it_and_none_before() -> None:
    """A long answer in flight when a second request starts the stall: the emulator keeps writing
    (it is behind the proxy), the client receives none of those writes until the window ends."""
    slow = EmulatorScript(ttft=Delay(mean_ms=5.0), itl=Delay(mean_ms=20.0), output_tokens=40)

    async def go() -> None:
        async with Emulator(slow) as emu, StallProxy(emu.url, stall_s=0.3, after_requests=2) as p:
            async with ChatClient(p.url) as c1, ChatClient(p.url) as c2:
                long = asyncio.create_task(c1.stream_chat({**BODY, "max_tokens": 40}))
                await asyncio.sleep(0.15)
                trigger = await c2.stream_chat({**BODY, "max_tokens": 2})
                res = await long
            assert res.ok and trigger.ok, (res.error, trigger.error)
            start, end = p.window_ns or (0, 0)
            truth = next(t for t in emu.truth if t.output_tokens == 40)
            held = [i for i, w in enumerate(truth.chunk_ns) if start <= w < end]
            assert len(held) >= 5  # 0.3 s of 20 ms tokens were written behind the stall
            arrivals, _ = arrival_ns(res)  # the kernel's receive stamps where recorded
            assert all(arrivals[i] >= end for i in held)
            assert not [a for a in arrivals if start + 20_000_000 < a < end]  # nothing slipped through
            assert [StallProxy.delivered_ns(w, p.window_ns) for w in truth.chunk_ns][held[0]] == end
    asyncio.run(go())


def test_a_marker_split_across_two_reads_is_counted_once() -> None:
    async def go() -> None:
        async with Emulator(FAST) as emu, StallProxy(emu.url, stall_s=5.0, after_requests=9) as p:
            body = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true}'
            head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            r, w = await asyncio.open_connection("127.0.0.1", p.port)
            for part in (head[:14], head[14:]):  # b"POST /v1/chat/" | b"completions ..."
                w.write(part)
                await w.drain()
                await asyncio.sleep(0.05)
            await asyncio.wait_for(r.readuntil(b"data: [DONE]"), 30)
            w.close()
            assert p.requests == 1
            assert len(emu.truth) == 1
    asyncio.run(go())


def test_delivered_ns_maps_writes_inside_the_window_to_its_end() -> None:
    w = (1_000, 3_000)
    assert [StallProxy.delivered_ns(t, w) for t in (999, 1_000, 2_999, 3_000, 5_000)] == [999, 3_000, 3_000, 3_000, 5_000]
    assert StallProxy.delivered_ns(2_000, None) == 2_000


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"stall_s": 0.0}, "more than 0 s"),
    ({"after_requests": 0}, "the first at the earliest"),
    ({"marker": b""}, "must not be empty"),
])
def test_bad_settings_are_refused_with_the_value(kwargs: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        StallProxy("http://127.0.0.1:8080", **kwargs)  # type: ignore[arg-type]


def test_an_upstream_without_a_port_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="'http://localhost'"):
        StallProxy("http://localhost")


def test_its_own_process_prints_where_it_listens_and_the_window() -> None:
    """The benchmark runs it as a process of its own: `listening URL`, then `stall START END`."""
    async def serve(out: list[str]) -> None:
        async with Emulator(FAST) as emu:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "rigbench.testing._stall", "--upstream", emu.url, "--stall-s", "0.2",
                "--after", "1", stdout=subprocess.PIPE)
            assert proc.stdout is not None
            try:
                line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
                out.append(line)
                url = line.split()[1]
                t0 = time.perf_counter_ns()
                async with ChatClient(url) as c:
                    res = await c.stream_chat({**BODY, "max_tokens": 2})
                assert res.ok, res.error
                out.append((await asyncio.wait_for(proc.stdout.readline(), 30)).decode())
                _, start, end = out[1].split()
                assert t0 <= int(start) < int(end) <= emu.truth[0].received_ns
                proc.terminate()  # SIGTERM: it prints when each request reached it, then ends
                out.append((await asyncio.wait_for(proc.stdout.readline(), 30)).decode())
                assert await asyncio.wait_for(proc.wait(), 30) == 0
                arrived = [int(x) for x in out[2].split()[1:]]
                assert len(arrived) == 1 and t0 <= arrived[0] <= int(start)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    lines: list[str] = []
    asyncio.run(serve(lines))
    assert lines[0].startswith("listening http://127.0.0.1:") and lines[0].rstrip().endswith("/v1")
    assert lines[1].startswith("stall ")
