"""Client overhead: CPU microseconds per SSE event, and the most events per second one core sustains.

    python benchmarks/client_overhead.py --streams 512 --repeats 5 [--json out.json]
    python benchmarks/client_overhead.py --ab --stacks protocol --loops uvloop   # fast path A/B

Every (HTTP stack, event loop) pair runs in a fresh subprocess pinned to one core, against
reference emulators in other processes (pinned to other cores, uvloop, so they are not the limit).
Two workloads per run:
  saturated  the emulators send tokens back to back (ITL 0): events/s at ~100% of the client's
             core is the client's ceiling, CPU/event its cost under batching.
  paced      512 streams at a realistic pace (ITL 20 ms ± 10 ms): CPU/event when events trickle in
             one per wake-up, the worst case for per-event cost.
Stacks, each a `StreamTransport` under the same `ChatClient`: `protocol` (rigbench's default
`StampedTransport`: asyncio.Protocol or the kernel-stamped reader, stamps as the bytes arrive),
`aiohttp` (`AiohttpTransport`), `streams` (asyncio.open_connection + StreamReader, written here the
way a user would). All three share the same client, SSE parser and accumulator, so the difference is
the HTTP layer.
`--kernel-ab` runs every protocol row twice, interleaved sample by sample: `protocol` (the default:
plain HTTP read with recvmsg and kernel arrival stamps) and `protocol/user` (`_http.KERNEL_STAMPS`
off: the asyncio.Protocol reader with user-space stamps only, the path before issue 25).
`--ab` runs every protocol row twice, interleaved sample by sample in the same run: `protocol`
(the default read path) and `protocol/base` (`_http.FAST_PATH` and `_sse.FAST_PATH` off: every
read through the general chunk decoder and SSE line loop, as before issue 15).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

from rigbench.client import (
    Accumulator,
    AiohttpTransport,
    ChatClient,
    StampedTransport,
    StreamRequest,
    StreamTransport,
)
from rigbench.client._sse import SSEParser
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

STACKS = ("protocol", "aiohttp", "streams")
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


class StreamsTransport(StreamTransport):
    """The straightforward asyncio-streams transport: one coroutine hop per read."""

    def __init__(self) -> None:
        self.pool: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def handle_stream(self, request: StreamRequest) -> Accumulator:
        assert self.client is not None
        hostport = self.client.base_url.split("//", 1)[1].split("/", 1)[0]
        host, port = hostport.rsplit(":", 1)
        data = request.data
        req = (
            f"POST /v1{request.path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        ).encode() + data
        reader, writer = self.pool.pop() if self.pool else await asyncio.open_connection(host, int(port))
        acc = Accumulator()
        parser = SSEParser()
        acc.sent_ns = time.perf_counter_ns()
        writer.write(req)
        await reader.readuntil(b"\r\n\r\n")
        acc.headers_ns = time.perf_counter_ns()
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                break
            chunk = await reader.readexactly(size + 2)
            now = time.perf_counter_ns()
            events = parser.feed(chunk[:-2])
            if events and not acc.finished:
                acc.on_events(events, now)
        self.pool.append((reader, writer))
        acc.end_check()
        return acc

    async def aclose(self) -> None:
        for _, w in self.pool:
            w.close()


async def _workload(urls: list[str], stack: str, streams: int, tokens: int) -> dict[str, float]:
    transports: dict[str, type[StampedTransport | AiohttpTransport | StreamsTransport]] = {
        "protocol": StampedTransport, "aiohttp": AiohttpTransport, "streams": StreamsTransport}
    clients = [ChatClient(u, transport=transports[stack]()) for u in urls]
    body = {**BODY, "max_tokens": tokens}

    async def batch(n_tok: int) -> tuple[int, int]:
        b = {**body, "max_tokens": n_tok}
        res = await asyncio.gather(*[clients[i % len(clients)].stream_chat(b) for i in range(streams)])
        events = errors = 0
        for r in res:
            events += len(r.chunk_ns) + r.empty_events + 2  # + the usage chunk and [DONE]
            errors += r.error is not None
        return events, errors

    await batch(2)  # open the connections
    c0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    events, errors = await batch(tokens)
    c1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - t0
    user, system = c1.ru_utime - c0.ru_utime, c1.ru_stime - c0.ru_stime
    cpu = user + system
    for c in clients:
        await c.aclose()
    return {
        "events": events,
        "errors": errors,
        "cpu_s": cpu,
        "wall_s": wall,
        "us_per_event": cpu / events * 1e6,
        "user_us_per_event": user / events * 1e6,
        "sys_us_per_event": system / events * 1e6,
        "events_per_s": events / wall,
        "cpu_fraction": cpu / wall,
    }


def _one(args: argparse.Namespace) -> None:
    """Child: one stack x loop x workload, pinned to one core; prints a JSON line."""
    from rigbench.client import _http, _sse

    _http.DEFER_PARSE = args.defer_parse
    _http.FAST_PATH = _sse.FAST_PATH = not args.base
    _http.KERNEL_STAMPS = not args.user_stamps
    if hasattr(os, "sched_setaffinity") and args.client_core >= 0:
        os.sched_setaffinity(0, {args.client_core})
    coro = _workload(args.urls.split(","), args.stack, args.streams, args.tokens)
    if args.loop == "uvloop":
        import uvloop

        out = uvloop.run(coro)
    else:
        out = asyncio.run(coro)
    print(json.dumps(out))


def _parse_only(fast: bool, tokens: int, requests: int) -> float:
    """CPU µs per event of the read path alone: recorded chunk bytes fed to a connection, one
    read per event, no socket and no wake-up (what paced load costs above this is the loop)."""
    from rigbench.client import _http, _sse
    from rigbench.client._stamped import _StreamSink

    _http.FAST_PATH = _sse.FAST_PATH = fast

    def chunk(obj: dict[str, Any]) -> bytes:
        ev = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
        return b"%x\r\n%b\r\n" % (len(ev), ev)

    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    tok = chunk({**base, "choices": [{"index": 0, "delta": {"content": " tok"}, "finish_reason": None}]})
    end = [chunk({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
           chunk({**base, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": tokens}}),
           b"e\r\ndata: [DONE]\n\n\r\n", b"0\r\n\r\n"]

    class _Transport:
        def write(self, data: bytes) -> None: ...
        def is_closing(self) -> bool:
            return False
        def close(self) -> None: ...

    async def go() -> float:
        loop = asyncio.get_running_loop()
        conn = _http.HttpConnection(lambda c: None, _http.ReadQueue(loop))
        conn.transport = _Transport()  # type: ignore[assignment]
        t0 = time.thread_time_ns()
        for _ in range(requests):
            acc = Accumulator()
            conn.send(b"", _StreamSink(acc, loop.create_future()))
            conn.data_received(head)
            for _ in range(tokens):
                conn.data_received(tok)
            for b in end:
                conn.data_received(b)
            assert acc.done and len(acc.chunk_ns) == tokens
        return (time.thread_time_ns() - t0) / 1e3 / (requests * (tokens + 3))

    return asyncio.run(go())


def _spawn_emulators(n: int, script: EmulatorScript) -> list[EmulatorProcess]:
    emus = [EmulatorProcess(script, uvloop=True).start() for _ in range(n)]
    ncpu = os.cpu_count() or 1
    if hasattr(os, "sched_setaffinity") and ncpu > n + 1:
        for i, e in enumerate(emus):
            assert e.pid is not None
            os.sched_setaffinity(e.pid, {1 + i})
    return emus


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--streams", type=int, default=512)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--saturated-tokens", type=int, default=200)
    p.add_argument("--paced-tokens", type=int, default=50)
    p.add_argument("--emulators", type=int, default=0, help="emulator processes (default: min(4, cores-1))")
    p.add_argument("--stacks", default=",".join(STACKS))
    p.add_argument("--loops", default="asyncio,uvloop")
    p.add_argument("--json", default="")
    p.add_argument("--defer-parse", action="store_true", help="A/B: stamp all ready reads, then parse")
    p.add_argument("--ab", action="store_true", help="A/B: the read fast path on and off, same run")
    p.add_argument("--paced-streams", type=int, default=0, help="streams of the paced workload (default --streams)")
    p.add_argument("--base", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kernel-ab", action="store_true", help="A/B: kernel-stamped reader vs Protocol reader, same run")
    p.add_argument("--user-stamps", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--stack", default="protocol", help=argparse.SUPPRESS)
    p.add_argument("--loop", default="asyncio", help=argparse.SUPPRESS)
    p.add_argument("--urls", default="", help=argparse.SUPPRESS)
    p.add_argument("--tokens", type=int, default=100, help=argparse.SUPPRESS)
    p.add_argument("--client-core", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        _one(args)
        return
    ncpu = os.cpu_count() or 1
    n_emu = args.emulators or max(1, min(4, ncpu - 1))
    pin = ncpu > n_emu + 1
    workloads = {
        "saturated": (
            EmulatorScript(ttft=Delay(mean_ms=0), itl=Delay(mean_ms=0), output_tokens=100_000),
            args.saturated_tokens,
        ),
        "paced": (
            EmulatorScript(
                ttft=Delay(dist="uniform", mean_ms=20, jitter_ms=10),
                itl=Delay(dist="uniform", mean_ms=20, jitter_ms=10),
                output_tokens=100_000,
            ),
            args.paced_tokens,
        ),
    }
    results: dict[str, Any] = {
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()} {ncpu} cores",
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "emulator_processes": n_emu,
        "client_pinned": pin,
        "streams": args.streams,
        "paced_streams": args.paced_streams or args.streams,
        "defer_parse": args.defer_parse,
        "loadavg_start": os.getloadavg(),
        "runs": [],
    }
    if args.ab:  # the read path alone, in this process, the two variants interleaved
        per: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.repeats):
            for base in (True, False):
                per[base].append(_parse_only(not base, args.paced_tokens, 200))
        for base, xs in per.items():
            results["runs"].append({
                "workload": "parse-only", "stack": "protocol" + ("/base" if base else ""), "loop": "none",
                "us_per_event": {"median": statistics.median(xs), "min": min(xs), "max": max(xs)},
                "samples": xs, "loadavg_1m": os.getloadavg()[0],
            })
            print(f"parse-only {'protocol/base' if base else 'protocol':14} {statistics.median(xs):6.2f} us/event "
                  f"[{min(xs):.2f}-{max(xs):.2f}]", flush=True)
    for wl, (script, tokens) in workloads.items():
        emus = _spawn_emulators(n_emu, script)
        urls = ",".join(e.url for e in emus)
        try:
            for stack in args.stacks.split(","):
                for loop in args.loops.split(","):
                    variants = [False, True] if (args.ab or args.kernel_ab) and stack == "protocol" else [False]
                    variant_flag, variant_name = ("--user-stamps", "/user") if args.kernel_ab else ("--base", "/base")
                    per_variant: dict[bool, list[dict[str, Any]]] = {v: [] for v in variants}
                    streams = (args.paced_streams or args.streams) if wl == "paced" else args.streams
                    for _, base in ((r, b) for r in range(args.repeats) for b in variants):
                        samples = per_variant[base]
                        cmd = [
                            sys.executable,
                            __file__,
                            "--one",
                            "--stack",
                            stack,
                            "--loop",
                            loop,
                            "--urls",
                            urls,
                            "--streams",
                            str(streams),
                            "--tokens",
                            str(tokens),
                            "--client-core",
                            "0" if pin else "-1",
                            *(["--defer-parse"] if args.defer_parse else []),
                            *([variant_flag] if base else []),
                        ]
                        emu_cpu0 = _emulator_cpu_s(emus)
                        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                        if out.returncode != 0:
                            raise SystemExit(out.stderr[-2000:])
                        sample = json.loads(out.stdout.strip().splitlines()[-1])
                        # the emulators' CPU per event (warm-up batch included: an upper bound)
                        sample["emulator_us_per_event"] = (
                            (_emulator_cpu_s(emus) - emu_cpu0) / sample["events"] * 1e6
                        )
                        sample["loadavg_1m"] = os.getloadavg()[0]
                        samples.append(sample)
                    for base, samples in per_variant.items():
                        _record_row(results, wl, stack + ("/defer" if args.defer_parse else "")
                                    + (variant_name if base else ""), loop, streams, samples)
        finally:
            for e in emus:
                e.stop()
    print()
    print(_table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def _record_row(results: dict[str, Any], wl: str, stack: str, loop: str, streams: int,
                samples: list[dict[str, Any]]) -> None:
    row = {
        "workload": wl,
        "stack": stack,
        "loop": loop,
        "streams": streams,
        "samples": samples,
    }
    for key in (
        "emulator_us_per_event",
        "us_per_event",
        "user_us_per_event",
        "sys_us_per_event",
        "events_per_s",
        "cpu_fraction",
    ):
        xs = [s[key] for s in samples]
        row[key] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}
    row["errors"] = sum(s["errors"] for s in samples)
    row["loadavg_1m"] = [s["loadavg_1m"] for s in samples]
    results["runs"].append(row)
    print(_line(row), flush=True)


def _emulator_cpu_s(emus: list[EmulatorProcess]) -> float:
    import psutil

    total = 0.0
    for e in emus:
        t = psutil.Process(e.pid).cpu_times()
        total += t.user + t.system
    return total


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _line(row: dict[str, Any]) -> str:
    u, e, c = row["us_per_event"], row["events_per_s"], row["cpu_fraction"]
    return (
        f"{row['workload']:9} {row['stack']:13} {row['loop']:7} {u['median']:6.2f} us/event "
        f"[{u['min']:.2f}-{u['max']:.2f}]  {e['median']:9.0f} events/s [{e['min']:.0f}-{e['max']:.0f}]  "
        f"cpu {c['median']:.2f}  emulator {row['emulator_us_per_event']['median']:.2f} us/event  "
        f"errors {row['errors']}"
    )


def _table(results: dict[str, Any]) -> str:
    lines = [
        "| workload | stack | loop | client CPU µs/event, median [min–max] | of which user / kernel µs "
        "| events/s, median [min–max] | client CPU (cores) | emulator CPU µs/event | errors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results["runs"]:
        if r["workload"] == "parse-only":
            u = r["us_per_event"]
            lines.append(f"| parse-only | {r['stack']} | none | {u['median']:.2f} [{u['min']:.2f}–{u['max']:.2f}] "
                         "| (thread CPU) | – | – | – | – |")
            continue
        u, e, c = r["us_per_event"], r["events_per_s"], r["cpu_fraction"]
        lines.append(
            f"| {r['workload']} | {r['stack']} | {r['loop']} | {u['median']:.2f} [{u['min']:.2f}–"
            f"{u['max']:.2f}] | {r['user_us_per_event']['median']:.2f} / {r['sys_us_per_event']['median']:.2f} | "
            f"{e['median']:,.0f} [{e['min']:,.0f}–{e['max']:,.0f}] | "
            f"{c['median']:.2f} | {r['emulator_us_per_event']['median']:.2f} | {r['errors']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
