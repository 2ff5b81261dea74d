"""Timing accuracy: rigbench's TTFT and ITL versus the reference emulator's truth, kernel arrival
stamps and rigbench's own (user-space) stamps side by side, optionally with another process
saturating the client's core.

    python benchmarks/timing_accuracy.py --streams 1,64 --loops uvloop,asyncio --saturate --repeats 3
    python benchmarks/timing_accuracy.py --streams 64 --slow-us 300   # a deliberately slowed client

The emulator runs in another process (shared CLOCK_MONOTONIC, see rigbench.testing._truth). Every
read of the kernel-stamped reader carries both stamps, so "kernel" and "user" below are the same
reads dated two ways. `--saturate` pins this process to one CPU (the last one of its affinity
mask), starts a busy-loop process pinned to the same CPU, and pins the emulator to the others, so
only the client competes. Per cell each mode runs: "kernel" (the recvmsg reader) and "protocol"
(the asyncio.Protocol reader, user-space stamps only, the path before kernel stamps), and reports
the client's CPU per event for both: the cost of the kernel stamps.

Each line is one measurement (JSON); the last line sums up per cell (median over repeats).
The verdict is `judge_accuracy` (rigbench.testing._accuracy_check) at a 1 ms bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from typing import Any

import psutil

from rigbench.client import ChatClient, _http
from rigbench.records import StreamResult
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, compare_with_truth
from rigbench.testing._accuracy_check import judge_accuracy, measure_noise, own_lateness

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _spin(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})
    while True:
        pass


async def drive(url: str, streams: int, tokens: int) -> tuple[list[StreamResult], float]:
    """Results and the client's CPU seconds over the measured part."""
    async with ChatClient(url) as c:
        await asyncio.gather(*[c.stream_chat({**BODY, "max_tokens": 2}) for _ in range(streams)])
        cpu0 = time.process_time()
        res = await asyncio.gather(*[c.stream_chat({**BODY, "max_tokens": tokens}) for _ in range(streams)])
        cpu = time.process_time() - cpu0
    return list(res), cpu


def _ms(x: float) -> float:
    return round(x * 1e3, 4)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--streams", default="1,64")
    p.add_argument("--loops", default="uvloop,asyncio")
    p.add_argument("--modes", default="kernel,protocol")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--itl-ms", type=float, default=20.0)
    p.add_argument("--itl-jitter-ms", type=float, default=10.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--saturate", action="store_true", help="a busy-loop process on the client's own core")
    p.add_argument("--slow-us", type=float, default=0.0, help="burn this much CPU per read (a slow client)")
    args = p.parse_args()
    if args.slow_us:
        for cls, name in ((_http.KernelStampedConnection, "_readable"), (_http.HttpConnection, "data_received")):
            real = getattr(cls, name)

            def slow(self: Any, *a: Any, _real: Any = real) -> None:
                _real(self, *a)
                end = time.thread_time() + args.slow_us / 1e6
                while time.thread_time() < end:
                    pass

            setattr(cls, name, slow)
    mask = sorted(os.sched_getaffinity(0))
    client_cpu = mask[-1]
    hog = None
    script = EmulatorScript(
        ttft=Delay(dist="uniform", mean_ms=30, jitter_ms=20),
        itl=Delay(dist="uniform", mean_ms=args.itl_ms, jitter_ms=args.itl_jitter_ms),
        output_tokens=args.tokens,
    )
    cells: dict[tuple[str, int, str, str], list[dict[str, float]]] = {}
    with EmulatorProcess(script, uvloop=True) as emu:
        assert emu.pid is not None
        if args.saturate:
            os.sched_setaffinity(0, {client_cpu})
            others = [c for c in mask if c != client_cpu] or [client_cpu]
            for proc in [psutil.Process(emu.pid), *psutil.Process(emu.pid).children(recursive=True)]:
                proc.cpu_affinity(others)
            hog = multiprocessing.get_context("spawn").Process(target=_spin, args=(client_cpu,), daemon=True)
            hog.start()
            time.sleep(0.2)
        noise = measure_noise()
        print(json.dumps({"machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} CPUs "
                          f"(affinity {mask})", "python": sys.version.split()[0],
                          "client_cpu": client_cpu if args.saturate else None, "saturated": args.saturate,
                          "noise_cpu_share": round(noise.cpu_share, 3),
                          "noise_wake_late_p99_ms": _ms(noise.wake_late_p99_s)}), flush=True)
        try:
            for _ in range(args.repeats):
                for loop in args.loops.split(","):
                    for n in map(int, args.streams.split(",")):
                        for mode in args.modes.split(","):
                            _http.KERNEL_STAMPS = mode == "kernel"
                            emu.reset()
                            coro = drive(emu.url, n, args.tokens)
                            if loop == "uvloop":
                                import uvloop

                                res, cpu = uvloop.run(coro)
                            else:
                                res, cpu = asyncio.run(coro)
                            truth = emu.fetch_truth()
                            events = sum(len(r.chunk_ns) for r in res)
                            views = {"user": [r.model_copy(update={"chunk_kernel_ns": []}) for r in res]}
                            if mode == "kernel":
                                views["kernel"] = res
                            for stamps, rs in views.items():
                                rep = compare_with_truth(rs, truth)
                                line: dict[str, Any] = {
                                    "loop": loop, "streams": n, "reader": mode, "stamps": stamps,
                                    "requests": rep.requests, "errors": sum(r.error is not None for r in res),
                                    "token_count_mismatches": rep.token_count_mismatches,
                                    "ttft_err_p50_ms": _ms(rep.ttft_err_p50_s), "ttft_err_p99_ms": _ms(rep.ttft_err_p99_s),
                                    "itl_err_p50_ms": _ms(rep.itl_err_p50_s), "itl_err_p99_ms": _ms(rep.itl_err_p99_s),
                                    "coalesced_read_share": round(rep.coalesced_read_share, 4),
                                    "cpu_us_per_event": round(cpu / max(1, events) * 1e6, 2),
                                }
                                if stamps == "kernel":
                                    v = judge_accuracy(rep, own_lateness(res, None), bound_s=0.001)
                                    line.update(own_late_p50_ms=_ms(rep.late_p50_s), own_late_p99_ms=_ms(rep.late_p99_s),
                                                verdict=v.kind)
                                print(json.dumps(line), flush=True)
                                cells.setdefault((loop, n, mode, stamps), []).append(
                                    {k: line[k] for k in ("ttft_err_p99_ms", "itl_err_p99_ms", "cpu_us_per_event")})
        finally:
            if hog is not None:
                hog.kill()
    summary = []
    for (loop, n, mode, stamps), xs in cells.items():
        summary.append({"loop": loop, "streams": n, "reader": mode, "stamps": stamps, "repeats": len(xs),
                        **{f"median_{k}": statistics.median(x[k] for x in xs) for k in xs[0]}})
    for loop in args.loops.split(","):
        for n in map(int, args.streams.split(",")):
            k, pr = cells.get((loop, n, "kernel", "kernel")), cells.get((loop, n, "protocol", "user"))
            if k and pr:
                ratio = statistics.median(x["cpu_us_per_event"] for x in k) / statistics.median(
                    x["cpu_us_per_event"] for x in pr)
                summary.append({"loop": loop, "streams": n, "cpu_per_event_kernel_over_protocol": round(ratio, 3)})
    print(json.dumps({"summary": summary}), flush=True)


if __name__ == "__main__":
    main()
