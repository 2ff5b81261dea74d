"""`rigbench run --endpoint URL --ray ADDR --clients 2` against the real embedded llama-server (issue 33,
item 5): every Ray test before this one drove the reference emulator. Two client actors on the
loopback cluster share each speed batch; the run merges their records into one run directory whose
figures, clocks and shares add up, and whose requests carry the kernel's arrival stamps taken in the
actors. Lean: one scenario, concurrency 2, two repetitions.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rigbench.analysis import summarize_speed
from rigbench.records import ClientShare, SpeedBatch
from rigbench.store import RunReader
from tests.needs import missing_module

if importlib.util.find_spec("ray") is None:  # found, not imported: Ray reads its auth settings on import
    missing_module("the Ray extra is not installed: pip install 'rigbench[ray]'")

from rigbench.scale._loopback import LoopbackCluster

from ..conftest import LiveRig

pytestmark = [pytest.mark.live, pytest.mark.proof, pytest.mark.timeout(1200)]


def test_two_client_actors_measure_the_real_llama_server(cluster: LoopbackCluster, ray_driver: Any,
                                                         live_rig: LiveRig, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    res = subprocess.run(
        [sys.executable, "-m", "rigbench", "run", "--endpoint", live_rig.info.base_url, "--ray", cluster.address,
         "--clients", "2", "--scenarios", "chat_short", "--concurrency", "2", "--repetitions", "2", "--warmup", "1",
         "--no-sanity", "--allow-untrusted", "--allow-busy-host", "--out", str(out)],
        capture_output=True, text=True, timeout=900, env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    [run_dir] = [d for d in out.iterdir() if d.is_dir()]
    reader = RunReader(run_dir)
    assert reader.header.status == "complete"
    fp = reader.header.fingerprint
    assert fp is not None and fp.engine == "llamacpp" and fp.mode == "attached"
    speed = summarize_speed(reader)
    assert speed is not None
    assert [(r.scenario, r.concurrency, r.requests, r.failed) for r in speed.rows] == [("chat_short", 2, 4, 0)]
    reqs = [r for r in reader.raw_records("speed_request") if not r["warmup"]]
    assert len(reqs) == 4 and all(r["result"]["usage"]["completion_tokens"] == 64 for r in reqs)
    # the actors stamped their reads with the kernel's arrival times, converted to the driver's clock
    assert all(r["result"]["arrival"]["source"] == "kernel" and r["result"]["chunk_kernel_ns"] for r in reqs)
    # each measured batch of two was shared by both actors, one request each, and both aligned their clocks
    shares = reader.records("client_share", ClientShare)
    batches = [b for b in reader.records("speed_batch", SpeedBatch) if not b.warmup]
    assert len(batches) == 2
    for b in batches:
        mine = sorted((s.actor, len(s.indices)) for s in shares if s.batch_unit_id == b.unit_id)
        assert mine == [("client0", 1), ("client1", 1)], mine
    clocks = {(c["actor"], c["phase"]) for c in reader.raw_records("client_clock")}
    assert {("client0", "before"), ("client1", "before")} <= clocks, clocks
