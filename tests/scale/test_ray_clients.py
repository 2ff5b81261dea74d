"""The speed load from client actors, against the reference emulator's truth.

Exact always: token counts per request, every request matched with its truth. Within the
single-process bound (1 ms at p99, tests/unit/test_accuracy.py) after clock alignment: the actors'
kernel-stamped arrivals against the emulator's writes, also for actors whose clocks were
deliberately skewed by seconds (the skew must be measured within its uncertainty, and corrected).
Judged on every attempt, pass or fail, never skipped: the kernel stamps each read before any of the
five processes sharing the machine runs, so a busy machine does not move them (a CI run on the
2-core box failed the old user-space figure by a hair, TTFT p99 1.00 ms against 1 ms; the kernel's
arrivals were off by 0.05 ms there). The actors' own lateness is reported, and judged by
tests/unit/test_accuracy.py where the client's thread can be watched. Up to three attempts, any
pass counts: noise can only add delay.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.needs import missing_module

if importlib.util.find_spec("ray") is None:  # found, not imported: Ray reads its auth settings on import
    missing_module("the Ray extra is not installed: pip install 'rigbench[ray]'")

from rigbench.scale._clients import CLOCK_BOUND_NS, ClientPool
from rigbench.scale._loopback import LoopbackCluster
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, compare_with_truth
from rigbench.testing._accuracy_check import judge_accuracy, own_lateness

BOUND_S = CLOCK_BOUND_NS / 1e9
SKEW_NS = {1: 5_000_000_000, 3: -3_000_000_000}  # actor index -> its clock is off by this much
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorProcess]:
    script = EmulatorScript(ttft=Delay(dist="uniform", mean_ms=20, jitter_ms=10))
    with EmulatorProcess(script, uvloop=True) as e:
        yield e


def test_four_actors_of_64_streams_within_the_single_process_bound_skewed_clocks_corrected(
        ray_driver: Any, emu: EmulatorProcess) -> None:
    # 4 x 64 streams at 80 ms a token: 3,200 events/s, half the single-process 64-stream test's rate, as
    # here five processes (emulator, four actors) share what two shared there
    body = {**BODY, "max_tokens": 12, "x_emulator": {"itl": {"dist": "uniform", "mean_ms": 80, "jitter_ms": 40}}}

    async def attempt(pool: ClientPool) -> tuple[Any, list[Any], Any]:
        emu.reset()
        clocks = await pool.align("before")
        results, shares = await pool.run_batch([body] * 256, "speed/test/c256/r0")
        rep = compare_with_truth(results, emu.fetch_truth())
        unc = max(c.uncertainty_ns for c in clocks) / 1e9
        verdict = judge_accuracy(rep, own_lateness(results, None), bound_s=BOUND_S, late_bound_s=float("inf"),
                                 context=f"clock alignment uncertainty up to {unc * 1e3:.3f} ms")
        return rep, [*clocks, shares], verdict

    async def go() -> list[tuple[Any, Any, Any]]:
        pool = ClientPool(ray_driver, 4, emu.url, None, cpus_per_client=0.5, skew_ns=SKEW_NS)
        await pool.start()
        try:
            await pool.run_batch([{**BODY, "max_tokens": 1}] * 256, "warm")  # connections opened
            tries = []
            for _ in range(3):
                tries.append(await attempt(pool))
                if tries[-1][2].kind == "pass":
                    break
            return tries
        finally:
            pool.stop()

    tries = asyncio.run(go())
    assert tries, "no attempt was judged"
    for rep, extra, _ in tries:  # exact, on every attempt
        assert rep.requests == 256 and rep.unmatched == 0
        assert rep.token_count_mismatches == 0 and rep.zero_itl == 0
        clocks, shares = extra[:-1], extra[-1]
        # no arrival before the true send, within what the clock alignment can tell
        assert rep.sent_after_received == 0
        assert rep.delivery_min_s >= -max(c.uncertainty_ns for c in clocks) / 1e9, rep
        for c in clocks:  # each skew detected, within the uncertainty it states (plus the true ~0 offset)
            want = SKEW_NS.get(int(c.actor.removeprefix("client")), 0)
            assert abs(c.offset_ns - want) <= c.uncertainty_ns + 200_000, c
            assert c.uncertainty_ns < CLOCK_BOUND_NS
        assert sorted(len(s.indices) for s in shares) == [64, 64, 64, 64]
    if all(v.kind == "fail" for _, _, v in tries):
        pytest.fail("client actors missed the 1 ms bound: " + " | ".join(v.reason for _, _, v in tries))


def test_merged_run_aggregate_is_the_actors_sum_and_an_unpinnable_clock_untrusts_the_run(
        ray_driver: Any, cluster: LoopbackCluster, emu: EmulatorProcess, tmp_path: Path) -> None:
    from rigbench.analysis import analyze_run, summarize_speed
    from rigbench.client import run as run_loop
    from rigbench.rig import EndpointSpec
    from rigbench.runner import RunConfig
    from rigbench.scale import execute_run_with_clients, summarize_clients
    from rigbench.store import RunReader
    from rigbench.suites import SuiteSettings
    from rigbench.suites.speed import SpeedSettings

    speed = SpeedSettings(profile="quick", scenarios=["chat_short"], repetitions=2, warmup=1, concurrency=[4, 64])
    cfg = RunConfig(suite_names=["speed"], settings=SuiteSettings(speed=speed), out_dir=tmp_path,
                    rig=EndpointSpec(base_url=emu.url), sanity=False, allow_untrusted=True, label="clients")
    # actor 2's echo waits 4 ms: its offset can be known only to +-2 ms, past the 1 ms bound
    header = run_loop(execute_run_with_clients(cfg, address=cluster.address, clients=4, cpus_per_client=0.5,
                                               echo_delay_s={2: 0.004}))
    reader = RunReader(tmp_path / header.run_id)
    assert header.trust is not None and not header.trust.trusted
    flagged = [r for r in header.trust.reasons if r.startswith("client actor ")]
    assert len(flagged) == 1 and "client2" in flagged[0] and "bound 1 ms" in flagged[0], header.trust.reasons
    speed = summarize_speed(reader)
    assert speed is not None
    assert [(r.concurrency, r.requests, r.failed) for r in speed.rows] == [(4, 8, 0), (64, 128, 0)]
    assert {r.output_tokens_target for r in speed.rows} == {64}
    actors = summarize_clients(reader)
    assert [a.actor for a in actors] == ["client0", "client1", "client2", "client3"]
    assert sum(a.requests for a in actors) == 8 + 128
    assert sum(a.output_tokens for a in actors) == (8 + 128) * 64  # every token counted once
    # aggregate throughput of the c=64 level equals the sum of what the four actors drove
    from rigbench.records import ClientShare, SpeedBatch

    batches = [b for b in reader.records("speed_batch", SpeedBatch) if b.concurrency == 64 and not b.warmup]
    shares = reader.records("client_share", ClientShare)
    assert len(batches) == 2  # repetitions=2 at c=64: the loop below must judge something
    for b in batches:
        mine = [s for s in shares if s.batch_unit_id == b.unit_id]
        assert len(mine) == 4 and b.started_ns == min(s.started_ns for s in mine)
        agg = sum(s.output_tokens for s in mine) / ((b.ended_ns - b.started_ns) / 1e9)
        each = sum(s.output_tokens / ((s.ended_ns - s.started_ns) / 1e9) for s in mine)
        assert agg == pytest.approx(each, rel=0.05)  # they started on one barrier and ran together
    # each actor ran its own self-check; the verdict names actors, not "the client"
    analysis = analyze_run(reader)
    labels = set(analysis.sections["selfcheck"].labels)  # type: ignore[union-attr]
    assert {"speed@client0", "speed@client1", "speed@client2", "speed@client3"} <= labels


def test_a_rate_schedule_split_over_actors_with_a_skewed_clock_reaches_the_server_on_time(
        ray_driver: Any, cluster: LoopbackCluster, emu: EmulatorProcess, tmp_path: Path) -> None:
    """`--rate` with `--clients 2`: one constant 40 req/s schedule, every other arrival to each actor, one actor's
    clock 5 s ahead. The server (the emulator's own receive stamps, the driver's clock) must see each request
    at its intended start (a 5 s skew left uncorrected sends half of them 5 s late or all at once), at the
    offered rate; the merged run and each actor's share report their schedule adherence."""
    from rigbench.analysis import summarize_load
    from rigbench.client import run as run_loop
    from rigbench.records import ClientShare, LoadRequest
    from rigbench.rig import EndpointSpec
    from rigbench.runner import RunConfig
    from rigbench.scale import execute_run_with_clients, summarize_clients
    from rigbench.store import RunReader
    from rigbench.suites import SuiteSettings
    from rigbench.suites.load import LoadSettings

    load = LoadSettings(rate_rps=40, arrival="constant", requests=60, output_tokens=4)
    cfg = RunConfig(suite_names=["load"], settings=SuiteSettings(load=load), out_dir=tmp_path,
                    rig=EndpointSpec(base_url=emu.url), sanity=False, allow_untrusted=True, label="rate-clients")
    emu.reset()
    header = run_loop(execute_run_with_clients(cfg, address=cluster.address, clients=2, cpus_per_client=0.5,
                                               skew_ns={1: 5_000_000_000}))
    reader = RunReader(tmp_path / header.run_id)
    reqs = sorted(reader.records("load_request", LoadRequest), key=lambda q: q.index)
    assert len(reqs) == 60 and all(q.result.ok for q in reqs)
    zero = reqs[0].result.scheduled_ns
    assert zero is not None
    # the one schedule, exactly: 25 ms apart on the driver's clock (to the nanosecond the float offsets round to)
    assert all(abs((q.result.scheduled_ns or 0) - (zero + i * 25_000_000)) <= 1 for i, q in enumerate(reqs))
    shares = reader.records("client_share", ClientShare)
    assert sorted((s.actor, tuple(s.indices)) for s in shares) == [("client0", tuple(range(0, 60, 2))),
                                                                    ("client1", tuple(range(1, 60, 2)))]
    skewed = next(s for s in shares if s.actor == "client1")
    assert abs(skewed.offset_ns - 5_000_000_000) <= skewed.offset_uncertainty_ns + 200_000
    # truth: when the server read each request, against its intended start
    truth = {t.response_id: t for t in emu.fetch_truth()}
    late_s = np.array([(truth[q.result.response_id or ""].received_ns - (q.result.scheduled_ns or 0)) / 1e9
                       for q in reqs])
    slack_s = max(s.offset_uncertainty_ns for s in shares) / 1e9 + 0.0005
    assert late_s.min() >= -slack_s, late_s.min()  # none sent early (the skew was taken off, not added)
    assert float(np.median(late_s)) < 0.010 and late_s.max() < 0.25, late_s  # none held back by seconds
    got = sorted(truth[q.result.response_id or ""].received_ns for q in reqs)
    assert (len(got) - 1) / ((got[-1] - got[0]) / 1e9) == pytest.approx(40, rel=0.03)
    # adherence: the merged window, as one process reports it, and each actor's own
    s = summarize_load(reader)
    assert s is not None and s.windows[0].requests == 60 and s.windows[0].scheduled_rate_rps == pytest.approx(40)
    assert s.windows[0].send_lag_s is not None and s.windows[0].achieved_send_rate_rps is not None
    actors = summarize_clients(reader)
    assert [(a.actor, a.requests) for a in actors] == [("client0", 30), ("client1", 30)]
    for a in actors:
        assert a.send_lag_p50_s is not None and a.send_lag_p50_s < 0.010
        assert a.sent_vs_scheduled is not None and a.sent_vs_scheduled == pytest.approx(1.0, abs=0.05)
    assert {"load@client0", "load@client1"} <= {c["label"] for c in reader.raw_records("selfcheck")}


def test_rigbench_run_rate_with_clients_splits_the_schedule_and_lists_each_actor_s_adherence(
        cluster: LoopbackCluster, emu: EmulatorProcess, tmp_path: Path) -> None:
    """The command line: `--rate` with `--clients 2 --ray ADDRESS` (refused before this was built) runs the
    load suite from the actors and prints each actor's send lag and sent/scheduled rate."""
    import os
    import subprocess
    import sys

    from rigbench.records import ClientShare, LoadRequest
    from rigbench.store import RunReader

    res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--endpoint", emu.url, "--rate", "20", "--arrival",
                          "constant", "--requests", "10", "--output-tokens", "4", "--clients", "2", "--ray",
                          cluster.address, "--no-sanity", "--allow-untrusted", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "220", "RAY_USAGE_STATS_ENABLED": "0"})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    [run_dir] = [d for d in tmp_path.iterdir() if d.is_dir()]
    reader = RunReader(run_dir)
    assert len(reader.records("load_request", LoadRequest)) == 10
    assert sorted(s.actor for s in reader.records("client_share", ClientShare)) == ["client0", "client1"]
    assert "send lag p50 / p99" in res.stdout and "sent / scheduled rate" in res.stdout
    assert "Load: schedule and throughput" in res.stdout
