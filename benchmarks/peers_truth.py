"""Ground truth for benchmarks/peers.py, and the CPU each tool's process tree spends.

- The reference emulator (rigbench.testing) in its own process stamps, on CLOCK_MONOTONIC, when it
  finished reading each request and when it handed each chunk to the kernel (GET /emulator/truth).
  Behind a StallProxy, a chunk written during the stall reaches the client at the stall's end
  (`StallProxy.delivered_ns`), so the truth is the delivery, not the write.
- The real llama-server prints each request's own prefill time, decode time and token counts.
- The intended start of each request, where the tool's schedule is known to the truth: constant
  gaps from the first request the server received, or a trace's timestamps from its first line.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from rigbench.testing import EmulatorProcess, StallProxy


@dataclass
class Req:
    """One measured request as the server (and the proxy in front of it) really handled it."""

    response_id: str
    received_ns: int  # the server finished reading it
    first_ns: int  # its first generated token reached the client (the write, or the stall's end)
    last_ns: int  # its last generated token reached the client
    end_ns: int
    output_tokens: int
    prompt_tokens: int  # the emulator's count (whitespace words) or llama-server's
    gaps_s: list[float] = field(default_factory=list)  # per token, a k-token chunk's gap split over k
    chunks: int = 0

    @property
    def ttft_s(self) -> float:
        return (self.first_ns - self.received_ns) / 1e9

    @property
    def itl_mean_s(self) -> float | None:
        n = self.output_tokens
        return (self.last_ns - self.first_ns) / 1e9 / (n - 1) if n > 1 else None


@dataclass
class Truth:
    reqs: list[Req] = field(default_factory=list)
    window_ns: tuple[int, int] | None = None  # first receipt .. last write: the traffic window
    stall_ns: tuple[int, int] | None = None
    probes: int = 0  # requests the tool sent besides the measured ones (validation, warm-up)
    source: str = "emulator"
    notes: list[str] = field(default_factory=list)

    @property
    def events(self) -> int:
        return sum(r.chunks + 2 for r in self.reqs)  # + the finish/usage chunk and [DONE]

    def by_id(self) -> dict[str, Req]:
        return {r.response_id: r for r in self.reqs}


def emulator_truth(emu: EmulatorProcess, *, min_tokens: int, stall_ns: tuple[int, int] | None = None,
                   arrived_ns: list[int] | None = None) -> Truth:
    """The measured requests: streamed, with at least `min_tokens` generated (a tool's validation
    probe asks for fewer). Behind a stall proxy: a chunk written during `stall_ns` is delivered at its
    end, and a request's receipt is when it reached the proxy (`arrived_ns`, every chat request in
    arrival order, paired with the server's receipts in order: a request the proxy held was still
    sent by the client when it reached the proxy)."""
    t = Truth(stall_ns=stall_ns)
    first = last = None
    rows = sorted(emu.fetch_truth(), key=lambda r: r.received_ns)
    chats = [r for r in rows if "chat/completions" in r.path]
    at_proxy = dict(zip((r.index for r in chats), arrived_ns, strict=False)) if arrived_ns else {}
    if arrived_ns and len(arrived_ns) != len(chats):
        t.notes.append(f"the proxy saw {len(arrived_ns)} chat requests, the server {len(chats)}: receipts unpaired")
        at_proxy = {}
    for r in rows:
        if not r.stream or not r.chunk_ns or r.output_tokens < min_tokens:
            t.probes += 1
            continue
        if at_proxy:
            r = r.model_copy(update={"received_ns": at_proxy[r.index]})
        deliv = [StallProxy.delivered_ns(w, stall_ns) for w in r.chunk_ns]
        gaps: list[float] = []
        for i in range(1, len(deliv)):
            k = r.chunk_tokens[i]
            gaps.extend([(deliv[i] - deliv[i - 1]) / 1e9 / k] * k)
        end = StallProxy.delivered_ns(r.end_ns or r.chunk_ns[-1], stall_ns)
        t.reqs.append(Req(r.response_id, r.received_ns, deliv[0], deliv[-1], end, r.output_tokens, r.prompt_tokens,
                          gaps, len(r.chunk_ns)))
        first = r.received_ns if first is None else min(first, r.received_ns)
        last = end if last is None else max(last, end)
    if first is not None and last is not None:
        t.window_ns = (first, last)
    return t


_LLAMA_PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_LLAMA_EVAL = re.compile(r"(?:^|\|)\s*eval time =\s*([\d.]+) ms /\s*(\d+) tokens", re.M)


class LogWatch:
    """Stamps each new line of the llama-server log as it appears (the traffic window)."""

    def __init__(self, path: Path) -> None:
        self.path, self.lines = path, []  # type: ignore[var-annotated]
        self._stop = threading.Event()
        self._pos = path.stat().st_size if path.exists() else 0
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with open(self.path, errors="replace") as f:
                f.seek(self._pos)
                chunk = f.read()
                self._pos = f.tell()
            now = time.perf_counter_ns()
            self.lines.extend((now, ln) for ln in chunk.splitlines())
            time.sleep(0.02)

    def stop(self) -> list[tuple[int, str]]:
        self._stop.set()
        self._t.join()
        return self.lines


def llama_truth(lines: list[tuple[int, str]], *, min_tokens: int) -> Truth:
    """llama-server's own prefill and decode time per request (its `timings` log lines): TTFT is the
    prefill, a token the decode time over the tokens after the first. No per-chunk stamps: the
    gaps list is each request's mean, and stamps are synthetic (0-based) so only durations compare."""
    t = Truth(source="llama-server log")
    text = "\n".join(ln for _, ln in lines)
    for i, ((pms, ptok), (ems, etok)) in enumerate(zip(_LLAMA_PROMPT.findall(text), _LLAMA_EVAL.findall(text),
                                                       strict=False)):
        n = int(etok)
        if n < min_tokens - 1:  # a validation probe, not a measured request
            t.probes += 1
            continue
        ttft_ns, decode_ns = int(float(pms) * 1e6), int(float(ems) * 1e6)
        t.reqs.append(Req(f"llama-{i}", 0, ttft_ns, ttft_ns + decode_ns, ttft_ns + decode_ns, n + 1, int(ptok),
                          [decode_ns / 1e9 / n] * n if n else [], n + 1))
    stamps = [ns for ns, ln in lines if "prompt eval time" in ln or "launch_slot" in ln or "release" in ln]
    if stamps:
        t.window_ns = (min(stamps), max(stamps))
    return t


# --- what the truth says a tool should have reported ---


def intended_constant(recv_sorted_ns: list[int], rate: float) -> list[int]:
    """Intended starts of a constant-rate schedule, in send order, anchored at the request that
    reached the server closest to its due time: no request is sent before it is due, so the real
    schedule lies at or before this one, and a wait measured from it can only be understated."""
    if not recv_sorted_ns:
        return []
    step = 1e9 / rate
    t0 = min(r - i * step for i, r in enumerate(recv_sorted_ns))
    return [round(t0 + i * step) for i in range(len(recv_sorted_ns))]


def response_ttft_s(truth: Truth, rate: float) -> list[float]:
    """TTFT from the intended start, per request, for a constant-rate case: the i-th request the
    server received was the i-th due (one FIFO schedule per tool; requests released together by a
    stall may be paired out of order among themselves, a few ms at most)."""
    reqs = sorted(truth.reqs, key=lambda r: r.received_ns)
    due = intended_constant([r.received_ns for r in reqs], rate)
    return [(r.first_ns - d) / 1e9 for r, d in zip(reqs, due, strict=True)]


def server_concurrency_max(truth: Truth) -> int:
    """The most requests the server held at once (received, not yet ended)."""
    ev = sorted([(r.received_ns, 1) for r in truth.reqs] + [(r.end_ns, -1) for r in truth.reqs])
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


def arrivals(received_ns: list[int], rate: float) -> dict[str, float | None]:
    """Offered against achieved at the server: requests received per second, and the gaps' coefficient
    of variation (1.0 for Poisson arrivals; 0 for constant; a tool that batches its sends shows more)."""
    got = sorted(received_ns)
    if len(got) < 3:
        return {"offered_rps": rate, "server_received_rps": None, "achieved_vs_offered": None, "gap_cv": None}
    gaps = np.diff(np.asarray(got, dtype=float)) / 1e9
    achieved = (len(got) - 1) / ((got[-1] - got[0]) / 1e9)
    return {"offered_rps": rate, "server_received_rps": round(achieved, 3),
            "achieved_vs_offered": round(achieved / rate - 1, 4), "gap_cv": round(float(gaps.std() / gaps.mean()), 3)}


def trace_adherence(received_ns: list[int], lines: list[dict[str, Any]]) -> dict[str, float | None]:
    """How far each arrival at the server was from the trace's own time, ms: |error| with both
    counted from their first request, and the spread once the median offset is taken off (a replay
    whose first request alone was late shows a large first figure and a small second)."""
    got = sorted(received_ns)
    want = sorted(float(ln["timestamp"]) for ln in lines)
    if not got or len(got) != len(want):
        return {"arrival_err_p50_ms": None, "arrival_err_p99_ms": None, "arrival_err_max_ms": None,
                "arrival_offset_ms": None, "arrival_spread_p99_ms": None}
    e = (np.asarray(got, dtype=float) - got[0]) / 1e6 - (np.asarray(want) - want[0])
    d, offset = np.abs(e), float(np.median(e))
    return {"arrival_err_p50_ms": round(float(np.percentile(d, 50)), 2),
            "arrival_err_p99_ms": round(float(np.percentile(d, 99)), 2),
            "arrival_err_max_ms": round(float(d.max()), 2), "arrival_offset_ms": round(offset, 2),
            "arrival_spread_p99_ms": round(float(np.percentile(np.abs(e - offset), 99)), 2)}


def lengths_met(got: list[int], want: list[int]) -> int:
    """How many of the asked lengths were produced exactly, as multisets (requests due at nearly the
    same time may reach the server in either order)."""
    return sum((Counter(got) & Counter(want)).values())


def slo_met(ttft_s: float | None, itl_s: float | None, e2e_s: float | None, slo: dict[str, float]) -> bool:
    """DistServe's definition: every target given holds; a missing figure misses its target."""
    for key, v in (("ttft_ms", ttft_s), ("itl_ms", itl_s), ("e2e_ms", e2e_s)):
        if key in slo and (v is None or v * 1e3 > slo[key]):
            return False
    return True


def capacity_rps(truth: Truth, slots: int) -> float | None:
    """The server's most completions per second: `slots` requests at once, each taking the median
    service time of the requests that found a slot free (received while fewer than `slots` were held)."""
    reqs = sorted(truth.reqs, key=lambda r: r.received_ns)
    free = []
    for r in reqs:
        held = sum(1 for o in reqs if o.received_ns < r.received_ns < o.end_ns)
        if held < slots:
            free.append((r.end_ns - r.received_ns) / 1e9)
    return round(slots / float(np.median(free)), 3) if free else None


# --- CPU of the tool's whole process tree, sampled ---


class CpuSampler:
    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.samples: list[tuple[int, float]] = []
        self._dead: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _total(self) -> float:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            procs = []
        seen: dict[int, float] = {}
        for p in procs:
            try:
                c = p.cpu_times()
                seen[p.pid] = c.user + c.system + c.children_user + c.children_system
            except psutil.Error:
                pass
        for pid, v in self._last.items():  # a process that ended keeps its last reading
            if pid not in seen:
                self._dead[pid] = v
        self._last = seen
        return sum(seen.values()) + sum(self._dead.values())

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.perf_counter_ns(), self._total()))
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._t.join()

    def cpu_in(self, window: tuple[int, int]) -> float:
        xs = np.array([s[0] for s in self.samples], dtype=np.float64)
        ys = np.array([s[1] for s in self.samples])
        a, b = np.interp([window[0], window[1]], xs, ys)
        return float(b - a)
