"""Timing accuracy: rigbench's measurements versus the reference emulator's truth.

    python benchmarks/timing_accuracy.py --streams 1,64,512 --loops asyncio,uvloop [--stack protocol]
    python benchmarks/timing_accuracy.py --streams 64 --slow-us 300   # a deliberately slowed client

The emulator runs in another process (shared CLOCK_MONOTONIC, see rigbench.testing._truth);
the client runs here under a SelfCheckMonitor, so each line also says how loaded the client was,
what the machine's noise was just before and after (probe process, client idle) and the verdict
of `judge_accuracy` at a 1 ms bound (pass / fail / too_noisy, rules in rigbench.testing._accuracy_check).
"""

from __future__ import annotations

import argparse
import asyncio
import json

import psutil

from rigbench.client import ChatClient, SelfCheckMonitor
from rigbench.records import SelfCheck, StreamResult
from rigbench.rig._cpu import usable_cpus
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, compare_with_truth
from rigbench.testing._accuracy_check import judge_accuracy, measure_noise

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


async def drive(
    url: str, server: psutil.Process, streams: int, stack: str, tokens: int
) -> tuple[list[StreamResult], SelfCheck, float]:
    """Results, the client's self-check, and the emulator's CPU seconds over the measured part."""
    async with ChatClient(url, http_stack=stack) as c:  # type: ignore[arg-type]
        await asyncio.gather(*[c.stream_chat({**BODY, "max_tokens": 2}) for _ in range(streams)])
        server_cpu0 = cpu_s(server)
        async with SelfCheckMonitor(f"c{streams}") as mon:
            res = await asyncio.gather(
                *[c.stream_chat({**BODY, "max_tokens": tokens}) for _ in range(streams)]
            )
        server_cpu_s = cpu_s(server) - server_cpu0
    assert mon.record is not None
    return list(res), mon.record, server_cpu_s


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--streams", default="1,64,512")
    p.add_argument("--loops", default="asyncio,uvloop")
    p.add_argument("--stack", default="protocol", choices=["protocol", "aiohttp"])
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--itl-ms", type=float, default=20.0)
    p.add_argument("--itl-jitter-ms", type=float, default=10.0)
    p.add_argument("--tokens-per-chunk", type=int, default=1)
    p.add_argument("--spec-depth", type=int, default=0)
    p.add_argument("--defer-parse", action="store_true", help="A/B: stamp all ready reads, then parse")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--slow-us", type=float, default=0.0, help="burn this much CPU per SSE event (a slow client)")
    p.add_argument("--no-fast-path", action="store_true", help="A/B: the general read decoders alone")
    args = p.parse_args()
    from rigbench.client import _http, _sse

    _http.DEFER_PARSE = args.defer_parse
    _http.FAST_PATH = _sse.FAST_PATH = not args.no_fast_path
    if args.slow_us:
        import time

        real = _http.HttpConnection.data_received

        def slow(self: _http.HttpConnection, data: bytes) -> None:
            real(self, data)
            end = time.thread_time() + args.slow_us / 1e6 * max(1, data.count(b"data:"))
            while time.thread_time() < end:
                pass

        _http.HttpConnection.data_received = slow  # type: ignore[method-assign]
    script = EmulatorScript(
        ttft=Delay(dist="uniform", mean_ms=30, jitter_ms=20),
        itl=Delay(dist="uniform", mean_ms=args.itl_ms, jitter_ms=args.itl_jitter_ms),
        output_tokens=args.tokens,
        tokens_per_chunk=args.tokens_per_chunk,
        spec_depth=args.spec_depth,
    )
    stack = "asyncio" if args.stack == "protocol" else "aiohttp"
    with EmulatorProcess(script, uvloop=True) as emu:
        for loop in args.loops.split(","):
            for n in [n for n in map(int, args.streams.split(",")) for _ in range(args.repeats)]:
                emu.reset()
                before = measure_noise()
                assert emu.pid is not None
                coro = drive(emu.url, psutil.Process(emu.pid), n, stack, args.tokens)
                if loop == "uvloop":
                    import uvloop

                    res, sc, server_cpu_s = uvloop.run(coro)
                else:
                    res, sc, server_cpu_s = asyncio.run(coro)
                after = measure_noise()
                rep = compare_with_truth(res, emu.fetch_truth())
                verdict = judge_accuracy(rep, before, after, bound_s=0.001, client_cpu_s=sc.cpu_s,
                                         schedule_s=(30 + args.tokens * args.itl_ms) / 1e3,
                                         server_cpu_s=server_cpu_s, cores=usable_cpus())
                ms = {k: round(v * 1e3, 3) for k, v in rep.model_dump().items() if k.endswith("_s")}
                print(
                    json.dumps(
                        {
                            "stack": args.stack + ("/defer" if args.defer_parse else "")
                            + ("/base" if args.no_fast_path else ""),
                            "itl_jitter_ms": args.itl_jitter_ms,
                            "spec_depth": args.spec_depth,
                            "loop": loop,
                            "streams": n,
                            "requests": rep.requests,
                            "errors": sum(r.error is not None for r in res),
                            "tokens": rep.tokens,
                            "token_count_mismatches": rep.token_count_mismatches,
                            "zero_itl": rep.zero_itl,
                            "coalesced_chunks": rep.coalesced_chunks,
                            "sent_after_received": rep.sent_after_received,
                            **{k.replace("_s", "_ms"): v for k, v in ms.items()},
                            "client_cpu_fraction": round(sc.cpu_fraction, 3),
                            "loop_lag_p99_ms": round((sc.loop_lag_p99_s or 0) * 1e3, 3),
                            "slow_us": args.slow_us,
                            "noise_cpu_share_before": round(before.cpu_share, 3),
                            "noise_cpu_share_after": round(after.cpu_share, 3),
                            "noise_wake_late_p99_ms": round(max(before.wake_late_p99_s,
                                                                after.wake_late_p99_s) * 1e3, 3),
                            "client_own_load": round(verdict.own_load, 3),
                            "rig_share": round(verdict.rig_share, 3),
                            "verdict": verdict.kind,
                        }
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    main()
