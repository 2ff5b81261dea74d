"""rigbench's timing versus the truth, at 1, 64 and 512 concurrent streams.

The emulator runs in its own process (its writes are then not delayed by the client's loop) and
both sides stamp with perf_counter_ns = CLOCK_MONOTONIC, one clock for the whole machine.

Exact always: token counts, chunk counts, tokens per chunk, no 0 s gaps, causality.
Within 1 ms at p99: TTFT and per-token ITL. Scheduling noise can only add delay, so a short
measurement is tried up to three times and the best attempt counts. If all three miss the bound
while a probe process beside them (SchedulerNoise) saw the OS wake sleepers up late by more than
half the bound at p99, the machine cannot support a 1 ms judgement and the test is skipped with
those figures; otherwise it fails. The bound is about the client, not about the neighbours.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from rigbench.client import ChatClient, SelfCheck, SelfCheckMonitor, StreamResult
from rigbench.testing import (
    AccuracyReport,
    Delay,
    EmulatorProcess,
    EmulatorScript,
    NoiseFloor,
    SchedulerNoise,
    compare_with_truth,
)

BOUND_S = 0.001
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
# streams -> (tokens per request, mean ITL ms): a few thousand events, well under a second each.
LOADS = {1: (64, 5.0), 64: (24, 10.0), 512: (12, 40.0)}


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    script = EmulatorScript(ttft=Delay(dist="uniform", mean_ms=20, jitter_ms=10))
    with EmulatorProcess(script, uvloop=True) as e:
        yield e


async def _attempt(url: str, streams: int, body: dict[str, object]) -> tuple[list[StreamResult], SelfCheck]:
    async with ChatClient(url) as c:
        await asyncio.gather(*[c.stream_chat({**BODY, "max_tokens": 1}) for _ in range(streams)])  # connect
        async with SelfCheckMonitor(f"c{streams}") as mon:
            res = await asyncio.gather(*[c.stream_chat(body) for _ in range(streams)])
    assert mon.record is not None
    return list(res), mon.record


Try = tuple[AccuracyReport, SelfCheck, NoiseFloor]


def _measure(emu: EmulatorProcess, streams: int, override: dict[str, object]) -> list[Try]:
    tokens, itl_ms = LOADS[streams]
    body = {
        **BODY,
        "max_tokens": tokens,
        "x_emulator": {"itl": {"dist": "uniform", "mean_ms": itl_ms, "jitter_ms": itl_ms / 2}, **override},
    }
    tries = []
    for _ in range(3):
        emu.reset()
        with SchedulerNoise() as noise:
            res, sc = asyncio.run(_attempt(emu.url, streams, body))
        assert noise.result is not None
        rep = compare_with_truth(res, emu.fetch_truth())
        # Exact, on every attempt:
        assert all(r.ok for r in res), [r.error for r in res if r.error][:3]
        assert rep.requests == streams and rep.unmatched == 0
        assert rep.token_count_mismatches == 0
        assert rep.zero_itl == 0
        assert rep.sent_after_received == 0
        assert rep.delivery_min_s >= 0.0  # no stamp precedes the true send
        tries.append((rep, sc, noise.result))
        if rep.ttft_err_p99_s <= BOUND_S and rep.itl_err_p99_s <= BOUND_S:
            break
        if noise.result.wake_late_p99_s > BOUND_S:
            break  # plainly too noisy to judge: do not spend more of a busy machine
    return tries


def _judge(tries: list[Try]) -> None:
    rep, sc, noise = min(tries, key=lambda t: max(t[0].ttft_err_p99_s, t[0].itl_err_p99_s))
    if rep.ttft_err_p99_s <= BOUND_S and rep.itl_err_p99_s <= BOUND_S:
        return
    figures = (
        f"TTFT err p99 {rep.ttft_err_p99_s * 1e3:.2f} ms, ITL err p99 {rep.itl_err_p99_s * 1e3:.2f} ms, "
        f"client CPU {sc.cpu_fraction:.0%} of a core, loop lag p99 {(sc.loop_lag_p99_s or 0) * 1e3:.2f} ms, "
        f"OS wake-up lateness p99 {noise.wake_late_p99_s * 1e3:.2f} ms"
    )
    if min(t[2].wake_late_p99_s for t in tries) > BOUND_S / 2:
        pytest.skip(f"machine too busy to judge a 1 ms bound (best of {len(tries)}): {figures}")
    pytest.fail(f"timing error above 1 ms at p99 on a quiet enough machine: {figures}")


@pytest.mark.parametrize("streams", [1, 64, 512])
def test_one_token_chunks(emu: EmulatorProcess, streams: int) -> None:
    _judge(_measure(emu, streams, {}))


@pytest.mark.parametrize("streams", [1, 64])
def test_multi_token_chunks_split_correctly(emu: EmulatorProcess, streams: int) -> None:
    # Speculative-style chunks of 1..5 tokens: counts per chunk must match the truth exactly
    # (compare_with_truth checks them) and per-token ITL must stay within the bound.
    _judge(_measure(emu, streams, {"spec_depth": 4, "spec_accept": 0.7, "role_chunk": False}))
