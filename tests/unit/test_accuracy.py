"""rigbench's timing versus the truth, at 1, 64 and 512 concurrent streams, on uvloop and asyncio.

The emulator runs in its own process (its writes are then not delayed by the client's loop) and
both sides stamp with perf_counter_ns = CLOCK_MONOTONIC, one clock for the whole machine.

Exact always: token counts, chunk counts, tokens per chunk, no 0 s gaps, causality.
Within 1 ms at p99: TTFT and per-token ITL, judged by `judge_accuracy`
(rigbench.testing._accuracy_check, where the rule and its reasoning live): machine noise is
measured by a separate probe while the client is idle, before and after, so the client cannot
starve it; the client's own load is its CPU time per second of schedule, which noise hardly
inflates; and the emulator's CPU time joins the client's to say how much of the machine the test
itself keeps busy (512 streams fill about two thirds of a 2-core box: not quiet). A miss fails on a quiet machine, and fails on any machine when the client needs more
than a core; a miss on a busy machine by a client with a sustainable load skips with the figures.
Noise only adds delay, so up to three attempts are made and any pass counts.

Figures behind the thresholds, measured on the shared 2-core box (load average 13-18, probes
saw a CPU share of 0.1-0.2 and wake-up p99 of 1.5-30 ms), 2026-11-30: healthy client own load
0.03-0.06 (1 stream), 0.15-0.5 (64), 0.5-0.9 (512; connection set-up excluded); with 300 us of
CPU work per SSE event: 1.8-2.2 (64) and about 3.7 (512). On a quiet 16-core host the healthy
client's CPU is 0.4-0.6 of the wall time at 512 streams (docs/benchmarks.md). A quiet machine
shows CPU share ~1.0 and wake-up p99 below 0.2 ms. MAX_OWN_LOAD is 1.5.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import psutil
import pytest

from rigbench.client import ChatClient, SelfCheckMonitor, _http
from rigbench.records import SelfCheck, StreamResult
from rigbench.rig._cpu import usable_cpus
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, compare_with_truth
from rigbench.testing._accuracy import AccuracyReport
from rigbench.testing._accuracy_check import (
    MAX_OWN_LOAD,
    AccuracyVerdict,
    MachineNoise,
    judge_accuracy,
    measure_noise,
)

BOUND_S = 0.001
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
TTFT_MS = 20.0
# streams -> (tokens per request, mean ITL ms): a few thousand events, well under a second each.
LOADS = {1: (64, 5.0), 64: (24, 10.0), 512: (12, 40.0)}
LOOPS = ["uvloop", "asyncio"]  # uvloop is the product's default


def _run(loop: str, coro: Coroutine[Any, Any, Any]) -> Any:
    if loop == "uvloop":
        import uvloop

        return uvloop.run(coro)
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    script = EmulatorScript(ttft=Delay(dist="uniform", mean_ms=TTFT_MS, jitter_ms=10))
    with EmulatorProcess(script, uvloop=True) as e:
        yield e


def _cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


async def _attempt(
    emu: EmulatorProcess, streams: int, body: dict[str, object]
) -> tuple[list[StreamResult], SelfCheck, float]:
    """The streams' results, the client's self-check and the emulator's CPU seconds, over the measured part."""
    assert emu.pid is not None
    server = psutil.Process(emu.pid)
    async with ChatClient(emu.url) as c:
        await asyncio.gather(*[c.stream_chat({**BODY, "max_tokens": 1}) for _ in range(streams)])  # connect
        server_cpu0 = _cpu_s(server)
        async with SelfCheckMonitor(f"c{streams}") as mon:
            res = await asyncio.gather(*[c.stream_chat(body) for _ in range(streams)])
        server_cpu_s = _cpu_s(server) - server_cpu0
    assert mon.record is not None
    return list(res), mon.record, server_cpu_s


def _measure(emu: EmulatorProcess, streams: int, override: dict[str, object], loop: str) -> list[AccuracyVerdict]:
    tokens, itl_ms = LOADS[streams]
    body = {
        **BODY,
        "max_tokens": tokens,
        "x_emulator": {"itl": {"dist": "uniform", "mean_ms": itl_ms, "jitter_ms": itl_ms / 2}, **override},
    }
    schedule_s = (TTFT_MS + tokens * itl_ms) / 1e3  # what the emulator is asked to take, noise-free
    verdicts = []
    for _ in range(3):
        emu.reset()
        before = measure_noise()
        res, sc, server_cpu_s = _run(loop, _attempt(emu, streams, body))
        after = measure_noise()
        rep = compare_with_truth(res, emu.fetch_truth())
        _assert_exact(rep, res, streams)
        v = judge_accuracy(rep, before, after, bound_s=BOUND_S, client_cpu_s=sc.cpu_s, schedule_s=schedule_s,
                           server_cpu_s=server_cpu_s, cores=usable_cpus())
        verdicts.append(v)
        if v.kind == "pass" or v.own_load > MAX_OWN_LOAD:
            break  # decided: a pass cannot be undone, nor can a client that needs more than a core
        if min(before.cpu_share, after.cpu_share) < 0.5:
            break  # plainly too busy to judge: do not spend more of a shared machine
    return verdicts


def _assert_exact(rep: AccuracyReport, res: list[StreamResult], streams: int) -> None:
    assert all(r.ok for r in res), [r.error for r in res if r.error][:3]
    assert rep.requests == streams and rep.unmatched == 0
    assert rep.token_count_mismatches == 0
    assert rep.zero_itl == 0
    assert rep.sent_after_received == 0
    assert rep.delivery_min_s >= 0.0  # no stamp precedes the true send


def _overall(verdicts: list[AccuracyVerdict]) -> AccuracyVerdict:
    """Any pass counts (noise only adds delay); else any fail; else too noisy."""
    for kind in ("pass", "fail"):
        hit = [v for v in verdicts if v.kind == kind]
        if hit:
            return hit[0] if kind == "pass" else max(hit, key=lambda v: v.own_load)
    return min(verdicts, key=lambda v: v.worst_err_p99_s)


def _judge(verdicts: list[AccuracyVerdict]) -> None:
    v = _overall(verdicts)
    if v.kind == "fail":
        pytest.fail(v.reason)
    if v.kind == "too_noisy":
        pytest.skip(f"best of {len(verdicts)}: {v.reason}")


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("streams", [1, 64, 512])
def test_one_token_chunks(emu: EmulatorProcess, streams: int, loop: str) -> None:
    _judge(_measure(emu, streams, {}, loop))


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("streams", [1, 64])
def test_multi_token_chunks_split_correctly(emu: EmulatorProcess, streams: int, loop: str) -> None:
    # Speculative-style chunks of 1..5 tokens: counts per chunk must match the truth exactly
    # (compare_with_truth checks them) and per-token ITL must stay within the bound.
    _judge(_measure(emu, streams, {"spec_depth": 4, "spec_accept": 0.7, "role_chunk": False}, loop))


def _slowed(per_event_s: float) -> Callable[[_http.HttpConnection, bytes], None]:
    """data_received that burns `per_event_s` of CPU per SSE event after the real one (a slow parser)."""
    real = _http.HttpConnection.data_received

    def slow(self: _http.HttpConnection, data: bytes) -> None:
        real(self, data)
        end = time.thread_time() + per_event_s * max(1, data.count(b"data:"))
        while time.thread_time() < end:
            pass

    return slow


@pytest.mark.parametrize("loop", LOOPS)
def test_a_slowed_client_fails_the_check_on_a_busy_machine_too(
    emu: EmulatorProcess, loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The adversary: a client that does 300 us of work per event (issue 11: 300 us per read gave
    # a TTFT error p99 of 166 ms). It must be *failed*, never excused as machine noise, whatever
    # the neighbours are doing. At 64 streams it burns at least 1536 x 0.3 ms = 0.46 s of CPU over
    # a 0.26 s schedule: an own load of 1.77 or more however busy the machine (CPU time, not wall
    # time), above MAX_OWN_LOAD; 64 rather than 512 streams keeps its CPU cost small.
    monkeypatch.setattr(_http.HttpConnection, "data_received", _slowed(0.0003))
    verdicts = _measure(emu, 64, {}, loop)
    v = _overall(verdicts)
    assert v.kind == "fail", v.reason
    assert v.worst_err_p99_s > BOUND_S


def test_judge_rules() -> None:
    rep = AccuracyReport(requests=1, unmatched=0, tokens=1, ttft_err_p50_s=0, ttft_err_p99_s=0.004,
                         ttft_err_max_s=0.004, itl_err_p50_s=0, itl_err_p99_s=0.0005, itl_err_max_s=0,
                         delivery_p99_s=0, delivery_min_s=0, token_count_mismatches=0, zero_itl=0,
                         coalesced_chunks=0, sent_after_received=0)
    quiet, busy = MachineNoise(cpu_share=1.0, wake_late_p99_s=0.0001), MachineNoise(cpu_share=0.3, wake_late_p99_s=0.004)

    def judge(r: AccuracyReport, before: MachineNoise, after: MachineNoise, client_cpu_s: float,
              server_cpu_s: float = 0.1, cores: int = 2) -> str:
        return judge_accuracy(r, before, after, bound_s=BOUND_S, client_cpu_s=client_cpu_s, schedule_s=1,
                              server_cpu_s=server_cpu_s, cores=cores).kind

    # A probe starved *during* the run would have called this machine busy; idle-time probes did not.
    assert judge(rep, quiet, quiet, 0.1) == "fail"
    assert judge(rep, quiet, busy, 0.1) == "too_noisy"
    assert judge(rep, busy, busy, 0.9) == "too_noisy"
    assert judge(rep, busy, busy, 1.6) == "fail"
    # Idle probes saw a quiet machine, but the emulator and client need 1.7 of 2 cores: the test
    # itself saturates the box (512 streams on 2 cores). On 16 cores the same figures are judged.
    assert judge(rep, quiet, quiet, 0.6, server_cpu_s=1.1, cores=2) == "too_noisy"
    assert judge(rep, quiet, quiet, 0.6, server_cpu_s=1.1, cores=16) == "fail"
    # No contention excuses a client that needs more than a core.
    assert judge(rep, quiet, quiet, 1.6, server_cpu_s=1.1, cores=2) == "fail"
    ok = rep.model_copy(update={"ttft_err_p99_s": 0.0009})
    assert judge(ok, busy, busy, 1.6) == "pass"
