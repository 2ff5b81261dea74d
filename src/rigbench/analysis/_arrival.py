"""Arrival pattern of one stream: did its content arrive as the engine generated it, or was it held
back and delivered in bursts by the server or a proxy? (docs/metrics.md, "Arrival pattern").

A streaming engine writes one SSE event per decode step (vLLM, SGLang: the step's tokens in one
event; llama.cpp: one event per token, a speculative step's tokens back to back). A client that
keeps up reads about one engine step per socket read. Two patterns cannot come from generation:

- **whole**: the response arrives in one or two reads after a long wait (a proxy that buffers each
  response, e.g. nginx with `proxy_buffering on`), within a span far shorter than the decoding
  the server itself reports (llama.cpp `timings.predicted_ms`), or, where the server reports no
  decode time, in several reads faster than any engine decodes one stream (over MAX_STEP_RATE steps
  per second: a long buffered body split by the socket into several reads).
- **flushed**: reads carry several engine steps each, at a near-constant period that does not
  follow the engine (a proxy or server that flushes on a timer or a buffer size).
- **coalesced**: reads carry several engine steps each at irregular gaps (a proxy that flushes on a
  buffer size, its own load or its upstream reads), and the kernel's arrival stamps show the client
  read each of them at once: the steps were held back upstream, not by the client.

What tells a flush from speculative decoding: a speculative engine also sends several tokens per
read, but as *one step* per read: vLLM puts a step's tokens in one event, and llama.cpp reports
its steps (`predicted_n - draft_n_accepted`), so steps per read stay near 1. A flush puts many
steps in one read. A client that reads late (a starved event loop) also coalesces steps, at
irregular gaps, so without kernel stamps only a fixed period is called a flush (the self-check names
a late client). With kernel stamps the two are told apart whatever the cadence: the kernel stamps a
read with the arrival of its last segment, so a client that reads late finds the last of its steps
arrived up to a step time before it reads (about half a step time, at the median), while steps an
upstream held back arrive together, and a prompt client reads them within a small part of a step.

Reads are recognised from `StreamResult.chunk_ns`: chunks delivered by one socket read share
rigbench's stamp. Each read is timed by the kernel's arrival stamp where the client recorded one
(`chunk_kernel_ns`, SO_TIMESTAMPNS), else by rigbench's own; with kernel stamps the client's own
lateness per read is known, and a read that the client took late is not counted towards a flush.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from statistics import median
from typing import Literal, NamedTuple

from rigbench.analysis._timing import ArrivalSource, arrival_ns
from rigbench.records import Frozen, StreamResult

__all__ = ["MIN_STEPS_JUDGED", "ArrivalKind", "ArrivalPattern", "ArrivalSummary", "stream_arrival", "summarize_arrival"]

ArrivalKind = Literal["streamed", "whole", "flushed", "coalesced", "not_judged"]

# Fewer engine steps than this cannot show a pattern (a short answer fits one read honestly).
MIN_STEPS_JUDGED = 8
# Steps per read above which reads carry several engine steps each (a healthy stream: about 1).
FLUSH_STEPS_PER_READ = 2.0
# A flush period: this share of the gaps between reads (the last, a final flush, left out) lies
# within PERIOD_TOLERANCE of one gap.
PERIOD_SHARE = 0.6
PERIOD_TOLERANCE = 0.25
# A flush period shorter than this is not called buffering: it moves TTFT by less than one period,
# and it is what a fast server and a loaded host produce by themselves (a 1 ms-per-token stream
# whose writes or reads pair up under load reads as "2 steps per read every 2 ms").
FLUSH_MIN_PERIOD_S = 0.02
# Content spread over less than this share of the server's own decode time was held back, once the
# server decoded long enough for the comparison to mean something.
COMPRESSED_SHARE = 0.25
COMPRESSED_MIN_DECODE_S = 0.05
# With kernel stamps, several steps in one read were held upstream only if the client read them at
# once: within this share of one engine step after they arrived (the median over its multi-step
# reads). A client that reads late finds the last step of each read arrived up to a step before,
# half a step at the median (0.4-1.1 of a step measured with a starved event loop); a prompt one
# behind a coalescing proxy read within 0.01 of a step on a 2-core box at load 10. Used by both
# `flushed` (a late client whose wake-ups cluster into a period was called a flush before) and
# `coalesced`: the median read carries at least FLUSH_STEPS_PER_READ steps and the median gap
# between reads is at least FLUSH_MIN_PERIOD_S (shorter holds are what a fast server on a loaded
# host does by itself, and move latency by less), at any cadence.
PROMPT_READ_SHARE = 0.25
# Engine steps per second of one stream that no engine reaches (0.1 ms per step; the fastest single-
# stream decoders are near 1 ms per step). A buffered body replayed over loopback or a LAN arrives at
# 10^5-10^6 steps/s; over a link slower than about 10 Mbit/s it spreads out and is not caught this way.
MAX_STEP_RATE = 10_000.0


class ArrivalPattern(Frozen):
    """How one stream's generated content arrived, from its per-read stamps."""

    kind: ArrivalKind
    detail: str  # what was seen, in words (e.g. "64 steps in 1 read after 2.21 s")
    steps: int  # engine writes: generating events, or llama.cpp's reported decode steps when fewer
    steps_source: Literal["timings", "events"]
    events: int  # generating SSE events
    reads: int  # distinct read stamps among them
    steps_per_read: float | None
    first_read_s: float | None  # request sent -> first read carrying generated content
    span_s: float | None  # first -> last such read
    period_s: float | None  # the most common gap between reads (a flush period when `flushed`)
    period_share: float | None  # share of gaps (the last left out) within ±25% of `period_s`
    server_decode_s: float | None  # llama.cpp timings.predicted_ms, when reported
    clock: ArrivalSource = "user"  # read times above: the kernel's arrival stamps, or rigbench's own
    # Kernel stamps only: median time from a multi-event read's arrival to the client's read of it.
    # A flush needs it small (the bytes came in bursts); a late client coalesces steps on its own.
    read_late_s: float | None = None
    gap_median_s: float | None = None  # the median gap between reads (the last left out)
    read_steps_median: float | None = None  # engine steps in the median read
    step_s: float | None = None  # one engine step: the server's decode time / steps where reported, else span / steps

    @property
    def buffered(self) -> bool:
        return self.kind in ("whole", "flushed", "coalesced")


class _Read(NamedTuple):
    user_ns: int  # rigbench's own stamp of the read (equal for every chunk it delivered)
    at_ns: int  # its arrival: the kernel's stamp where recorded, else `user_ns`
    events: int  # generating events it delivered


def _reads(res: StreamResult) -> list[_Read]:
    """The socket reads that carried generated content, in order: equal consecutive own stamps are one read."""
    at, _ = arrival_ns(res)
    out: list[_Read] = []
    for u, a in zip(res.chunk_ns, at, strict=True):
        if out and out[-1].user_ns == u:
            out[-1] = out[-1]._replace(events=out[-1].events + 1)
        else:
            out.append(_Read(u, a, 1))
    return out


def _steps(res: StreamResult, events: int) -> tuple[int, Literal["timings", "events"]]:
    """Engine writes to compare reads with: one per generating event, or fewer where llama.cpp reports
    fewer decode steps (tokens less accepted drafts: a speculative step's tokens go out as a burst
    of events). Never more than the events: a step whose tokens share an event is one write."""
    t = res.timings or {}
    n, acc = t.get("predicted_n"), t.get("draft_n_accepted", 0)
    if isinstance(n, int) and isinstance(acc, int) and 0 < n - acc < events:
        return n - acc, "timings"
    return events, "events"


def _period(gaps: Sequence[float]) -> tuple[float | None, float | None]:
    """The gap with the most others within ±PERIOD_TOLERANCE of it (ties: the longer), and that share.

    Kept strict on purpose: a client that reads late also puts several steps in a read, but at gaps
    that follow the steps; only a clock puts them at one period.
    """
    if not gaps:
        return None, None
    best, best_n = gaps[0], -1
    for g in gaps:
        n = sum(1 for h in gaps if abs(h - g) <= PERIOD_TOLERANCE * g)
        if n > best_n or (n == best_n and g > best):
            best, best_n = g, n
    return best, best_n / len(gaps)


def stream_arrival(res: StreamResult) -> ArrivalPattern:
    """Classify one stream's arrival (module doc); `not_judged` says why when it cannot tell."""
    reads = _reads(res)
    _, clock = arrival_ns(res)
    events = len(res.chunk_ns)
    steps, source = _steps(res, events)
    t = res.timings or {}
    server_decode_s = float(t["predicted_ms"]) / 1e3 if isinstance(t.get("predicted_ms"), int | float) else None
    if not reads:
        return ArrivalPattern(kind="not_judged", detail="no generated content", steps=steps, steps_source=source,
                              events=0, reads=0, steps_per_read=None, first_read_s=None, span_s=None,
                              period_s=None, period_share=None, server_decode_s=server_decode_s, clock=clock)
    sent = res.sent_ns  # kernel stamps are converted to the same perf_counter clock
    first_s = (reads[0].at_ns - sent) / 1e9
    span_s = (reads[-1].at_ns - reads[0].at_ns) / 1e9
    gaps = [(b.at_ns - a.at_ns) / 1e9 for a, b in pairwise(reads)]
    held = gaps[:-1] if len(gaps) >= 2 else gaps
    period, share = _period(held)
    per_read = steps / len(reads)
    gap_median = median(held) if held else None
    # each read's engine steps: its events, scaled down where llama.cpp reports fewer steps than events
    read_steps = median(r.events * steps / events for r in reads)
    step_s = (server_decode_s / steps if server_decode_s else span_s / (steps - 1) if steps > 1 else None)
    # How long after its arrival the client read each read that carried several events: a client
    # that reads late coalesces steps itself (kernel stamps only; None with user-space stamps).
    late = sorted(r.user_ns - r.at_ns for r in reads if r.events > 1) if clock == "kernel" else []
    read_late_s = late[len(late) // 2] / 1e9 if late else None
    # With kernel stamps: the client read its multi-step reads at once, so an upstream held the steps
    prompt = read_late_s is None or (step_s is not None and read_late_s < PROMPT_READ_SHARE * step_s)
    common = {"steps": steps, "steps_source": source, "events": events, "reads": len(reads),
              "steps_per_read": per_read, "first_read_s": first_s, "span_s": span_s, "period_s": period,
              "period_share": share, "server_decode_s": server_decode_s, "clock": clock,
              "read_late_s": read_late_s, "gap_median_s": gap_median, "read_steps_median": read_steps,
              "step_s": step_s}
    kind: ArrivalKind = "streamed"
    detail = f"{steps} steps in {len(reads)} reads"
    if steps < MIN_STEPS_JUDGED:
        kind, detail = "not_judged", f"too short to tell: {steps} engine steps (at least {MIN_STEPS_JUDGED} needed)"
    elif len(reads) <= 2:
        kind = "whole"
        detail = f"{steps} steps in {len(reads)} read{'s' if len(reads) > 1 else ''} after {first_s:.2f} s"
    elif (server_decode_s is not None and server_decode_s >= COMPRESSED_MIN_DECODE_S
          and span_s < COMPRESSED_SHARE * server_decode_s):
        kind = "whole"
        detail = (f"{steps} steps within {span_s * 1e3:.1f} ms after {first_s:.2f} s, though the server reports "
                  f"{server_decode_s:.2f} s of decoding")
    elif span_s * MAX_STEP_RATE < steps - 1:
        kind = "whole"
        detail = (f"{steps} steps in {len(reads)} reads within {span_s * 1e3:.1f} ms after {first_s:.2f} s, faster "
                  f"than any engine decodes one stream (over {MAX_STEP_RATE:,.0f} steps/s)")
    elif (per_read >= FLUSH_STEPS_PER_READ and share is not None and share >= PERIOD_SHARE and period is not None
          and period >= FLUSH_MIN_PERIOD_S and prompt):
        kind = "flushed"
        detail = (f"{per_read:.1f} steps per read at a near-fixed {period * 1e3:.0f} ms period "
                  f"({share:.0%} of gaps)")
    elif (read_steps >= FLUSH_STEPS_PER_READ and gap_median is not None and gap_median >= FLUSH_MIN_PERIOD_S
          and read_late_s is not None and prompt):  # read_late_s: kernel stamps only
        kind = "coalesced"
        detail = (f"{read_steps:.0f} engine steps per read (median) at irregular gaps ({gap_median * 1e3:.0f} ms "
                  f"median), each read {read_late_s * 1e3:.2f} ms after its bytes arrived (one step: "
                  f"{(step_s or 0) * 1e3:.1f} ms)")
    return ArrivalPattern(kind=kind, detail=detail, **common)


class ArrivalSummary(Frozen):
    """The arrival patterns of one scenario row's requests, and what they mean for its latency."""

    requests: int  # measured requests with generated content
    judged: int  # requests long enough to tell (`not_judged` left out)
    whole: int
    flushed: int
    buffered: bool  # at least half of the judged requests were buffered: the row's TTFT and ITL are withheld
    finding: str | None  # "buffered by the server or a proxy: ..." when any judged request was
    coalesced: int = 0

    @property
    def held(self) -> int:
        """Requests whose latency is not the engine's: whole, flushed or coalesced."""
        return self.whole + self.flushed + self.coalesced


def summarize_arrival(patterns: Sequence[ArrivalPattern]) -> ArrivalSummary:
    """Aggregate one row. The finding names the figures: how many requests, in how many reads, after
    how long (whole), or how many steps per read at what period (flushed)."""
    judged = [p for p in patterns if p.kind != "not_judged"]
    whole = [p for p in judged if p.kind == "whole"]
    flushed = [p for p in judged if p.kind == "flushed"]
    coalesced = [p for p in judged if p.kind == "coalesced"]
    parts = []
    if whole:
        wait = median(p.first_read_s or 0.0 for p in whole)
        most = max(p.reads for p in whole)
        how = ("in one read" if most == 1 else "in <= 2 reads") if most <= 2 else (
            "in a burst far shorter than decoding takes")
        parts.append(f"{len(whole)} of {len(judged)} requests arrived {how} after {wait:.1f} s (median)")
    if flushed:
        per_read = median(p.steps_per_read or 0.0 for p in flushed)
        period = median(p.period_s or 0.0 for p in flushed)
        parts.append(f"{len(flushed)} of {len(judged)} requests arrived {per_read:.1f} engine steps per read at a "
                     f"near-fixed {period * 1e3:.0f} ms period (median)")
    if coalesced:
        per_read = median(p.read_steps_median or 0.0 for p in coalesced)
        gap = median(p.gap_median_s or 0.0 for p in coalesced)
        parts.append(f"{len(coalesced)} of {len(judged)} requests arrived {per_read:.0f} engine steps per read at "
                     f"irregular gaps ({gap * 1e3:.0f} ms, median), read at once by the client (kernel stamps)")
    n_buf = len(whole) + len(flushed) + len(coalesced)
    return ArrivalSummary(
        requests=len(patterns), judged=len(judged), whole=len(whole), flushed=len(flushed), coalesced=len(coalesced),
        buffered=bool(judged) and 2 * n_buf >= len(judged),
        finding=("buffered by the server or a proxy: " + "; ".join(parts)) if parts else None,
    )
