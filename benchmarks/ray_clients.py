"""Client actors on Ray: events/s and client CPU per SSE event for 1, 2 and 4 actors against the emulator.

    python benchmarks/ray_clients.py [--actors 1,2,4] [--streams 512] [--repeats 3] [--ray ADDRESS] [--json out.json]

Without --ray it starts a loopback cluster (rigbench.scale._loopback: a head with enough logical
CPUs, every process on 127.0.0.1) and stops it afterwards. Emulators run in their own processes
(uvloop) and the streams are spread over them round-robin by actor. Two workloads, as in
benchmarks/client_overhead.py:
  saturated  tokens back to back (ITL 0): the events/s the actors reach together is the load the
             pool can drive (on a small machine the emulators and actors share the cores: the
             ceiling is the machine's, and the figure says so).
  paced      `streams` streams at 20 ms +- 10 ms per token: CPU per event at a realistic pace.
CPU per event is the actors' own process CPU (their self-check records: the event loop, the
client, and Ray's threads in that process) over the events they received; the driver is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import platform
import statistics
import time
from typing import Any

from rigbench.scale._clients import ClientPool
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
WORKLOADS = {
    "saturated": EmulatorScript(ttft=Delay(mean_ms=0), itl=Delay(mean_ms=0), output_tokens=100_000),
    "paced": EmulatorScript(ttft=Delay(dist="uniform", mean_ms=20, jitter_ms=10),
                            itl=Delay(dist="uniform", mean_ms=20, jitter_ms=10), output_tokens=100_000),
}


async def _measure(ray: Any, urls: list[str], actors: int, streams: int, tokens: int, repeats: int,
                   cpus: float) -> dict[str, Any]:
    out: list[dict[str, float]] = []
    # a pool has one base URL: one pool per emulator, the actors dealt over them
    per_url = [max(0, (actors - i + len(urls) - 1) // len(urls)) for i in range(len(urls))]
    pools = [ClientPool(ray, n, u, None, cpus_per_client=cpus) for u, n in zip(urls, per_url, strict=True) if n]
    for p in pools:
        await p.start()
    try:
        share = [streams * p.n // actors for p in pools]
        share[0] += streams - sum(share)
        for p, s in zip(pools, share, strict=True):  # connections opened, not timed
            await p.run_batch([{**BODY, "max_tokens": 1}] * s, "warm")
        for _ in range(repeats):
            for p in pools:
                await p.selfcheck_begin("bench")
            t0 = time.perf_counter()
            got = await asyncio.gather(*(p.run_batch([{**BODY, "max_tokens": tokens}] * s, "bench")
                                         for p, s in zip(pools, share, strict=True)))
            wall = time.perf_counter() - t0
            checks = [c for p in pools for c in await p.selfcheck_end()]
            events = sum(len(r.chunk_ns) for results, _ in got for r in results)
            failed = sum(1 for results, _ in got for r in results if not r.ok)
            cpu = sum(c.cpu_s for c in checks)
            span = max(s.ended_ns for _, sh in got for s in sh) - min(s.started_ns for _, sh in got for s in sh)
            out.append({"events": events, "failed": failed, "wall_s": wall, "span_s": span / 1e9,
                        "events_per_s": events / (span / 1e9), "cpu_us_per_event": cpu / events * 1e6,
                        "actor_cpu_max": max(c.cpu_fraction for c in checks)})
    finally:
        for p in pools:
            p.stop()
    best = max(out, key=lambda r: r["events_per_s"])
    return {"actors": actors, "streams": streams, "tokens": tokens, "runs": out,
            "events_per_s_median": statistics.median(r["events_per_s"] for r in out),
            "cpu_us_per_event_median": statistics.median(r["cpu_us_per_event"] for r in out),
            "actor_cpu_max_best": best["actor_cpu_max"], "failed": sum(r["failed"] for r in out)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--actors", default="1,2,4")
    ap.add_argument("--streams", type=int, default=512)
    ap.add_argument("--saturated-tokens", type=int, default=200)
    ap.add_argument("--paced-tokens", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--emulators", type=int, default=0, help="emulator processes (default: min(4, cores // 4 + 1))")
    ap.add_argument("--cpus-per-actor", type=float, default=1.0)
    ap.add_argument("--ray", default="", help="an existing cluster (default: a loopback one, started here)")
    ap.add_argument("--workloads", default="saturated,paced")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    actor_counts = [int(x) for x in args.actors.split(",")]
    cores = os.cpu_count() or 1
    n_emu = args.emulators or min(4, cores // 4 + 1)
    from rigbench.scale import connect
    from rigbench.scale._loopback import LoopbackCluster

    cluster = None
    address = args.ray
    if not address:
        cluster = LoopbackCluster(head_cpus=max(actor_counts) * max(1, int(args.cpus_per_actor)) + 1).start()
        address = cluster.address
        os.environ.update(cluster.driver_env)
    results: dict[str, Any] = {"machine": f"{platform.node()} {cores} cores {platform.processor() or ''}".strip(),
                               "date": _dt.date.today().isoformat(), "emulators": n_emu, "workloads": {}}
    try:
        with connect(address) as ray:
            for wl in args.workloads.split(","):
                emus = [EmulatorProcess(WORKLOADS[wl], uvloop=True).start() for _ in range(n_emu)]
                try:
                    tokens = args.saturated_tokens if wl == "saturated" else args.paced_tokens
                    rows = []
                    for n in actor_counts:
                        r = asyncio.run(_measure(ray, [e.url for e in emus], n, args.streams, tokens, args.repeats,
                                                 args.cpus_per_actor))
                        rows.append(r)
                        print(f"{wl:9s} actors={n}  events/s {r['events_per_s_median']:10,.0f}  "
                              f"CPU/event {r['cpu_us_per_event_median']:6.1f} us  busiest actor "
                              f"{r['actor_cpu_max_best']:.0%} of a core  failed {r['failed']}", flush=True)
                    results["workloads"][wl] = rows
                finally:
                    for e in emus:
                        e.stop()
    finally:
        if cluster is not None:
            cluster.stop()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
