"""rigbench's standing work: CPU it spends per second whatever the request rate (issue 15).

    python benchmarks/standing_cost.py --seconds 5 --repeats 5 [--metrics-url http://127.0.0.1:8080/metrics]

At one slow stream (a minute-long request on a loaded CPU server) the client's CPU per request is
its standing work: the self-check's loop-lag probe, the live progress display and the telemetry
scraper. Each is run alone on an idle uvloop for `--seconds`, old setting and new side by side in
the same round (order alternating), and reported as the share of one core (process CPU / wall),
median [min-max] over the rounds:

- self-check probe: fixed 5 ms pace (before) vs backing off to 100 ms while the loop is idle;
- progress display: rich's default 10 redraws/s vs rigbench's 2/s, on a terminal (output to
  /dev/null through a forced terminal) and off one (auto-refresh off);
- telemetry: one scrape every 0.5 s of `--metrics-url` (llama-server's or vLLM's /metrics);
- with `--stream`: one stream of two requests against the reference emulator at 50 ms per token
  (64 tokens), the bare client against the client under the self-check, CPU per request.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import time
from collections.abc import Callable

import uvloop
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from rigbench.cli._progress import RichProgress
from rigbench.client import ChatClient, SelfCheckMonitor
from rigbench.rig._telemetry import TelemetrySampler
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 64}


def share(fn: Callable[[float], None], seconds: float) -> float:
    c0, w0 = time.process_time(), time.perf_counter()
    fn(seconds)
    return (time.process_time() - c0) / (time.perf_counter() - w0)


def monitor(max_interval_s: float) -> Callable[[float], None]:
    def run(s: float) -> None:
        async def go() -> None:
            async with SelfCheckMonitor("idle", max_interval_s=max_interval_s):
                await asyncio.sleep(s)

        uvloop.run(go())

    return run


def progress(before: bool, tty: bool) -> Callable[[float], None]:
    """rigbench's progress display now, or as it was (rich's defaults: 10 redraws/s, always on)."""

    def run(s: float) -> None:
        with open("/dev/null", "w") as null:
            console = Console(file=null if tty else io.StringIO(), force_terminal=tty, width=100)
            if before:
                bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                               MofNCompleteColumn(), TimeElapsedColumn(), console=console)
                with bar:
                    bar.add_task("speed", total=10)
                    uvloop.run(asyncio.sleep(s))
            else:
                with RichProgress(console) as p:
                    p.task("speed", 10)
                    uvloop.run(asyncio.sleep(s))

    return run


def telemetry(url: str, engine: str) -> Callable[[float], None]:
    def run(s: float) -> None:
        async def go() -> None:
            async with ChatClient(url.rsplit("/metrics", 1)[0] + "/v1") as c, \
                    TelemetrySampler(c, engine, interval_s=0.5):
                await asyncio.sleep(s)

        uvloop.run(go())

    return run


def stream(url: str, monitored: bool) -> Callable[[float], None]:
    """Two requests on one stream (the `seconds` argument is unused: the emulator sets the pace)."""

    def run(_: float) -> None:
        async def go() -> None:
            async with ChatClient(url) as c:
                await c.stream_chat({**BODY, "max_tokens": 1})  # connect outside the measurement
                if monitored:
                    async with SelfCheckMonitor("stream"):
                        for _ in range(2):
                            await c.stream_chat(BODY)
                else:
                    for _ in range(2):
                        await c.stream_chat(BODY)

        uvloop.run(go())

    return run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--metrics-url", default=None, help="a server's /metrics to scrape (telemetry row)")
    p.add_argument("--engine", default="llamacpp", help="engine name for the metric names (telemetry row)")
    p.add_argument("--stream", action="store_true", help="also: one slow stream, bare client vs self-checked")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    cases: dict[str, Callable[[float], None]] = {
        "self-check probe, fixed 5 ms (before)": monitor(0.005),
        "self-check probe, backing off to 100 ms (now)": monitor(0.1),
        "progress on a terminal, 10 redraws/s (before)": progress(True, True),
        "progress on a terminal, 2 redraws/s (now)": progress(False, True),
        "progress off a terminal, 10 redraws/s (before)": progress(True, False),
        "progress off a terminal, no background redraw (now)": progress(False, False),
    }
    if args.metrics_url:
        cases["telemetry, a scrape per 0.5 s"] = telemetry(args.metrics_url, args.engine)
    script = EmulatorScript(ttft=Delay(mean_ms=20), itl=Delay(mean_ms=50), output_tokens=64)
    with EmulatorProcess(script, uvloop=True) as emu:
        if args.stream:
            cases["one slow stream, bare client: CPU ms per request"] = stream(emu.url, False)
            cases["one slow stream, with the self-check: CPU ms per request"] = stream(emu.url, True)
        seen: dict[str, list[float]] = {k: [] for k in cases}
        names = list(cases)
        for r in range(args.repeats):
            for name in names if r % 2 == 0 else names[::-1]:
                if name.startswith("one slow stream"):
                    c0 = time.process_time()
                    cases[name](0.0)
                    seen[name].append((time.process_time() - c0) / 2 * 1e3)
                else:
                    seen[name].append(share(cases[name], args.seconds))
    print("| component | share of one core (or as named), median [min–max] |\n| --- | --- |")
    for name, xs in seen.items():
        fmt = "{:.1f}" if name.startswith("one slow stream") else "{:.2%}"
        print(f"| {name} | {fmt.format(statistics.median(xs))} [{fmt.format(min(xs))}–{fmt.format(max(xs))}] |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": args.seconds, "repeats": args.repeats, "shares": seen}, f, indent=1)


if __name__ == "__main__":
    main()
