"""The self-check sees a blocked loop, late sends and a busy client, and says "client-bound"."""

from __future__ import annotations

import asyncio
import time

from rigbench.analysis._selfcheck import assess_selfcheck
from rigbench.client import ChatClient, SelfCheck, SelfCheckMonitor
from rigbench.testing import Delay, Emulator, EmulatorScript


def _record(**kw: object) -> SelfCheck:
    base: dict[str, object] = dict(
        unit_id="selfcheck/speed", label="speed", wall_s=10.0, cpu_s=2.0, cpu_cores=2,
        loop_lag_samples=100, loop_lag_p50_s=0.0001, loop_lag_p99_s=0.0003, loop_lag_max_s=0.0005,
        send_lag_samples=10, send_lag_p50_s=0.00001, send_lag_p99_s=0.0001, send_lag_max_s=0.0002,
        loop="asyncio",
    )
    return SelfCheck.model_validate({**base, **kw})


def test_quiet_client_is_not_client_bound() -> None:
    v = assess_selfcheck([_record()])
    assert not v.client_bound and v.reasons == [] and v.remedy is None


def test_each_threshold_flags_with_a_remedy() -> None:
    for kw, word in [({"cpu_s": 9.5}, "core"), ({"loop_lag_p99_s": 0.004}, "loop lag"),
                     ({"send_lag_p99_s": 0.02}, "send lag"), ({"gc_pause_max_s": 0.01, "gc_pauses": 3}, "garbage")]:
        v = assess_selfcheck([_record(**kw)])
        assert v.client_bound and word in v.reasons[0] and v.remedy, kw


async def test_monitor_measures_a_blocked_loop_and_emits_one_record() -> None:
    got: list[SelfCheck] = []
    async with SelfCheckMonitor("blocked", got.append, interval_s=0.002):
        for _ in range(5):
            await asyncio.sleep(0.004)
            time.sleep(0.02)  # the loop is stuck for 20 ms, five times
    (rec,) = got
    assert rec.kind == "selfcheck" and rec.unit_id == "selfcheck/blocked"
    assert rec.loop_lag_max_s is not None and rec.loop_lag_max_s >= 0.015
    assert rec.cpu_s >= 0.0 and rec.wall_s >= 0.1
    assert assess_selfcheck(got).client_bound


async def test_client_reports_send_lag_to_the_monitor() -> None:
    script = EmulatorScript(ttft=Delay(mean_ms=1), itl=Delay(mean_ms=0.2), output_tokens=4)
    async with Emulator(script) as emu, ChatClient(emu.url) as c, SelfCheckMonitor("sends") as mon:
        late = time.perf_counter_ns() - 30_000_000  # meant to go out 30 ms ago
        r = await c.stream_chat({"model": "m", "messages": []}, scheduled_ns=late)
        await c.stream_chat({"model": "m", "messages": []})
    assert mon.record is not None and r.scheduled_ns == late
    assert mon.record.send_lag_samples == 2
    assert mon.record.send_lag_max_s is not None and mon.record.send_lag_max_s >= 0.030
