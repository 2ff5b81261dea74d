"""Rate-mode figures of the load suite's windows (docs/metrics.md, "Rate mode").

Per window:
- service time: TTFT, ITL and end-to-end latency measured from the actual send (as the speed suite);
- response time: TTFT and end-to-end latency measured from the request's intended start (its place in
  the arrival schedule): what a user waiting in that queue sees; no coordinated omission;
- schedule adherence: client send lag (actual send - intended start, or - the moment a
  `max_concurrency` slot freed), achieved send rate against the scheduled one;
- steady state (a window offering one rate): the ramp at its start and the drain after its last arrival
  are left out; throughput is the requests that ended within the steady interval per second of it, and
  a window whose queue grew over that interval did not sustain its rate; one too short to have a steady
  interval is marked, and left out of the knee;
- goodput under the run's SLO (analysis/_goodput.py), and the knee of several rates, as a bound;
- how the prompts' lengths came out against the lengths asked;
- multi-turn sessions: sessions per second, and the figures of each turn.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from rigbench.analysis import _metrics as m
from rigbench.analysis._goodput import RateBound, meets_slo, rate_bound
from rigbench.analysis._host import assess_host
from rigbench.analysis._stats import Stat, describe
from rigbench.analysis._timing import RequestTiming, request_timing
from rigbench.records import Frozen, HostConditions, LoadRequest, LoadWindow, SloTargets
from rigbench.store import RunReader

__all__ = ["BACKLOG_SHARE", "DRAIN_RAMPS", "SCHEDULE_LAG_P99_MAX_S", "SCHEDULE_RATE_MIN", "STEADY_MIN_REQUESTS", "STEADY_MIN_SHARE",
           "WARMUP_SHARE", "InputLengths", "LoadSummary", "LoadWindowSummary", "SteadyState", "TurnSummary",
           "load_timing", "summarize_load"]

# The client kept its schedule when its send lag p99 is at most this...
SCHEDULE_LAG_P99_MAX_S = 0.005
# ...and it sent at no less than this fraction of the scheduled rate (windows of 20+ requests).
SCHEDULE_RATE_MIN = 0.98
# Steady state of a window offering one rate. The ramp (left out) lasts this share of the arrival span, or
# the time the first requests took to come back, whichever is longer: until then the server is filling up.
WARMUP_SHARE = 0.1
# A window has a steady interval when what is left after the ramp is at least this share of its arrival span
# and holds at least this many arrivals; else it is "too short" and its figures are the whole window's.
STEADY_MIN_SHARE = 0.5
STEADY_MIN_REQUESTS = 10
# The queue grew (the rate was not sustained) when more requests arrived in the steady interval than ended in
# it, by more than this share of the arrivals and by more than BACKLOG_Z standard deviations of the in-flight
# count's chance variation (about Poisson: variance = rate x time in the system, doubled for the difference
# of two counts, scaled by the arrivals' squared coefficient of variation for gamma arrivals).
BACKLOG_SHARE = 0.05
BACKLOG_Z = 3.0
# A window too short for a steady interval still shows a server that could not keep up when its requests kept
# coming back, after the last arrival, for longer than its arrivals lasted and over this many times the first
# requests' return time: a drain that long is a queue, not one request's service time.
DRAIN_RAMPS = 2.0


class LoadTiming(Frozen):
    """One load request's figures: its timing from the send, plus its place in the schedule."""

    timing: RequestTiming
    # the client's lateness: (actual send, less any connection opening) - (intended start, or the moment
    # a `max_concurrency` slot freed)
    send_lag_s: float
    slot_wait_s: float | None  # intended start -> a `max_concurrency` slot freed (None: no wait)
    ttft_response_s: float | None  # intended start -> first generated chunk
    e2e_response_s: float | None  # intended start -> end of the stream


def load_timing(q: LoadRequest) -> LoadTiming:
    res = q.result
    t = request_timing(res, output_tokens_target=q.output_tokens_target)
    intended = res.scheduled_ns if res.scheduled_ns is not None else res.sent_ns
    # the client's part of the delay is judged at the first attempt; retry waits (--retry-on) and the refused
    # attempts count in the response time, the service time is the answered attempt's alone
    first = res.retries[0] if res.retries else res
    place = m.Schedule(intended_ns=intended, ready_ns=max(intended, q.slot_ns) if q.slot_ns is not None else intended,
                       sent_ns=res.sent_ns, first_sent_ns=first.sent_ns, first_connect_ns=first.connect_ns)
    return LoadTiming(
        timing=t, send_lag_s=m.send_lag_s(place),
        slot_wait_s=(q.slot_ns - intended) / 1e9 if q.slot_ns is not None else None,
        ttft_response_s=m.ttft_response_s(place, t.first_chunk_s),
        e2e_response_s=m.e2e_response_s(place, t.e2e_latency_s))


class SloResult(Frozen):
    met: int  # requests that met every target
    fraction: float  # met / requests judged (failed requests count as missed)
    goodput_rps: float  # requests that met it and ended in the window's measured interval, per second of it
    missed: dict[str, int]  # per metric (and "failed"): requests that missed it
    requests: int = 0  # judged: the steady interval's arrivals (a window without one: all its requests)


SteadyVerdict = Literal["steady", "not sustained", "too short"]


class SteadyState(Frozen):
    """The steady interval of a window offering one rate: from the end of its ramp to its last arrival
    (after it, the drain). Figures of a "steady" or "not sustained" window are this interval's."""

    state: SteadyVerdict
    warmup_s: float  # the ramp left out: WARMUP_SHARE of the arrival span, or the first requests' return time
    ramp_s: float | None  # median time the first requests took to come back (intended start -> end)
    measured_s: float  # the steady interval (0: too short to have one)
    arrived: int  # requests whose intended start lies in the interval
    ended: int  # requests that ended in it (completed or failed)
    completed: int  # ...of which completed
    backlog_growth: int  # arrived - ended: by how much the requests in flight grew over the interval
    backlog_limit: float | None  # the growth beyond which the rate counts as not sustained
    note: str | None = None  # why not steady, when not


class InputLengths(Frozen):
    """The prompts' lengths against the lengths asked (a session's first turns only: a later turn's target
    is its new message, while the server counts its whole history)."""

    requests: int
    # how the sent length is known, per request: rigbench's count of the rendered prompt with the server's
    # tokenizer, else the server's own count (usage.prompt_tokens); else not known
    from_rigbench: int
    from_server: int
    unknown: int
    exact: int  # requests whose sent length equals the length asked
    target_min: int
    target_max: int
    sent_min: int | None = None
    sent_max: int | None = None
    deviation: Stat | None = None  # (sent - asked) / asked, over the requests whose sent length is known
    tokenizer: bool = True  # rigbench could count the rendered prompts (the server has a tokenizer it uses)

    @property
    def off(self) -> int:
        """Requests whose sent length is known and differs from the length asked."""
        return self.from_server + self.from_rigbench - self.exact


class TurnSummary(Frozen):
    """One turn of the sessions of a `--sessions` window (0-based), over the sessions that reached it."""

    turn: int
    requests: int
    failed: int
    prompt_tokens: Stat | None  # as the server counted them: the history grows with the turn
    ttft_response_s: Stat | None
    itl_s: Stat | None
    e2e_response_s: Stat | None


class LoadWindowSummary(Frozen):
    window: str  # "saturation", "trace" or "r<k>"
    mode: str  # rate | saturation | trace
    arrival: str | None
    burstiness: float | None
    offered_rate_rps: float | None  # None: the saturation burst; sessions: sessions per second
    max_concurrency: int | None
    requests: int
    failed: int
    window_s: float  # intended zero -> last end
    scheduled_rate_rps: float | None  # (n - 1) / (last intended start - first)
    achieved_send_rate_rps: float | None  # (n - 1) / (last send - first send)
    # completed requests (and their output tokens) per second: of the steady interval where the window has one
    # (`steady`), else of the whole window
    throughput_rps: float
    output_tok_s: float
    throughput_window_rps: float  # completed requests / window_s: ramp and drain included
    send_lag_s: Stat | None
    slot_wait_s: Stat | None  # only requests that waited for a slot
    slot_waits: int
    # latency over the steady interval's arrivals where the window has one, else over all its requests
    ttft_s: Stat | None  # service: from the send (withheld for multi-token chunks, as the speed suite)
    ttft_response_s: Stat | None  # response: intended start -> first generated chunk
    itl_s: Stat | None  # per-request mean ITL (vLLM's TPOT)
    e2e_s: Stat | None  # service
    e2e_response_s: Stat | None  # response
    slo: SloResult | None = None
    schedule_kept: bool = True
    schedule_note: str | None = None  # why not, when not
    steady: SteadyState | None = None  # None: not one offered rate (a burst, a trace, sessions)
    input_lengths: InputLengths | None = None
    sessions: int | None = None  # multi-turn: sessions started (offered_rate_rps: sessions per second)
    turns: int | None = None
    sessions_completed: int | None = None  # sessions whose every turn completed
    sessions_per_s: float | None = None  # completed sessions per second of the window
    per_turn: list[TurnSummary] = Field(default_factory=list)

    @property
    def measured_over(self) -> str:
        """What the figures are of: the steady interval, or the whole window."""
        return "steady interval" if self.steady is not None and self.steady.measured_s > 0 else "whole window"


class LoadSummary(Frozen):
    windows: list[LoadWindowSummary]
    slo: SloTargets | None
    attainment: float  # the knee's threshold
    # several offered rates (a sweep, a --rate list): where the knee lies among the rates that reached steady
    # state (SLO met by `attainment` of the requests), and where the highest rate the server sustained lies
    knee: RateBound | None = None
    capacity: RateBound | None = None
    warnings: list[str] = Field(default_factory=list)

    @property
    def knee_rps(self) -> float | None:
        """The knee when a tested rate bounds it from above too; None for a bound on one side only."""
        return self.knee.low_rps if self.knee is not None and self.knee.bracketed else None

    @property
    def rates(self) -> list[LoadWindowSummary]:
        return [w for w in self.windows if w.mode == "rate"]

    @property
    def saturation(self) -> LoadWindowSummary | None:
        return next((w for w in self.windows if w.mode == "saturation"), None)


def summarize_load(reader: RunReader) -> LoadSummary | None:
    windows = reader.records("load_window", LoadWindow)
    if not windows:
        return None
    by_window: dict[str, list[LoadRequest]] = defaultdict(list)
    for q in reader.records("load_request", LoadRequest):
        by_window[q.window].append(q)
    settings = (reader.header.plan.get("suites") or {}).get("load") or {}
    attainment = float(settings.get("slo_attainment") or 0.99)
    rows = [_window(w, sorted(by_window.get(w.window, []), key=lambda q: q.index)) for w in windows]
    rows.sort(key=lambda r: (r.mode != "saturation", r.offered_rate_rps or 0.0))
    slo = next((w.slo for w in windows if w.slo is not None), None)
    busy = _busy_windows(reader)
    warnings = [f"LATE SENDS: load {r.window} ({_rate(r)}): {r.schedule_note}. The host was busy during this window "
                f"({busy[r.window]}): other processes, not rigbench alone, held the sends back"
                if r.window in busy else f"CLIENT-BOUND: load {r.window} ({_rate(r)}): {r.schedule_note}"
                for r in rows if not r.schedule_kept]
    warnings += [f"load {r.window} ({_rate(r)}): {r.steady.note}" for r in rows
                 if r.steady is not None and r.steady.state == "too short" and r.steady.note]
    warnings += [_lengths_warning(r) for r in rows if r.input_lengths is not None and _lengths_off(r.input_lengths)]
    knee = capacity = None
    rates = [r for r in rows if r.mode == "rate" and r.sessions is None]
    judged = [r for r in rates if r.steady is not None and r.steady.state != "too short" and _delivered(r)]
    if len(rates) > 1:  # a bound needs a curve: several rates
        capacity = rate_bound([(_offered(r), r.steady is not None and r.steady.state == "steady") for r in judged])
        if slo is not None:
            knee = rate_bound([(_offered(r), _met(r, attainment)) for r in judged])
            if knee is not None and knee.out_of_order:
                warnings.append(f"the SLO was missed at {_list(knee.out_of_order)} req/s, below {knee.low_rps:.3g} "
                                "req/s where it was met: the curve is not monotone (chance, or a disturbance); "
                                "measure those rates again, longer (--duration)")
        left = [r for r in rates if r not in judged]
        if left:
            warnings.append(f"{len(left)} of {len(rates)} rates left out of the knee and the sustained rate "
                            f"({_list([_offered(r) for r in left])} req/s): no steady state, or the client sent "
                            "below the scheduled rate (marked in the tables)")
    return LoadSummary(windows=rows, slo=slo, attainment=attainment, knee=knee, capacity=capacity, warnings=warnings)


def _delivered(r: LoadWindowSummary) -> bool:
    """The server saw the rate: the client sent at no less than SCHEDULE_RATE_MIN of the scheduled rate (a send
    lag that delays every request alike moves no rate; it counts in the response times, and is warned about)."""
    sched, sent = r.scheduled_rate_rps, r.achieved_send_rate_rps
    return sched is None or sent is None or sent >= SCHEDULE_RATE_MIN * sched


def _offered(r: LoadWindowSummary) -> float:
    return r.offered_rate_rps or 0.0


def _met(r: LoadWindowSummary, attainment: float) -> bool:
    """A rate meets the SLO when it was sustained and enough of its requests met every target: a rate the
    server could not sustain meets no latency target for long, whatever this window's requests saw."""
    return r.steady is not None and r.steady.state == "steady" and r.slo is not None and r.slo.fraction >= attainment


def _list(rates: Sequence[float]) -> str:
    return ", ".join(f"{x:.3g}" for x in rates)


def _busy_windows(reader: RunReader) -> dict[str, str]:
    """Load windows measured on a busy host (their `host_conditions` records, "host/load/<window>/..."):
    window -> the cause, as `assess_host` words it."""
    recs = [r for r in reader.records("host_conditions", HostConditions) if r.scenario.startswith("load/")]
    verdict = assess_host(recs)
    return {r.scenario.split("/", 1)[1]: row.cause for r, row in zip(recs, verdict.rows, strict=True)
            if row.busy and row.cause}


def _rate(r: LoadWindowSummary) -> str:
    if r.mode == "trace":
        return "trace replay"
    if r.sessions is not None:
        return f"{r.offered_rate_rps:.3g} sessions/s offered"
    return f"{r.offered_rate_rps:.3g} req/s offered" if r.offered_rate_rps is not None else "saturation burst"


def _ns(q: LoadRequest) -> tuple[int, int]:
    """(intended start, end) of a request."""
    res = q.result
    return (res.scheduled_ns if res.scheduled_ns is not None else res.sent_ns), (res.done_ns or res.sent_ns)


def _steady(w: LoadWindow, qs: list[LoadRequest]) -> SteadyState | None:
    """The steady interval of a window offering one rate (None: a burst, a trace or sessions: no one rate)."""
    if w.mode != "rate" or w.sessions is not None or not qs:
        return None
    starts, ends = zip(*(_ns(q) for q in qs), strict=True)
    zero = min(starts)
    span_s = (max(starts) - zero) / 1e9
    # the ramp: until the first requests came back the server was filling up
    first = sorted(range(len(qs)), key=lambda i: starts[i])
    ramp_ids = [i for i in first if (starts[i] - zero) / 1e9 <= WARMUP_SHARE * span_s]
    ramp_ids = ramp_ids if len(ramp_ids) >= 3 else first[:3]
    ramp = sorted((ends[i] - starts[i]) / 1e9 for i in ramp_ids)
    ramp_s = ramp[len(ramp) // 2] if ramp else None
    warmup_s = max(WARMUP_SHARE * span_s, ramp_s or 0.0)
    t0, t1 = zero + int(warmup_s * 1e9), max(starts)
    measured_s = max(0.0, (t1 - t0) / 1e9)
    arrived = sum(1 for s in starts if t0 < s <= t1)
    in_interval = [i for i in range(len(qs)) if t0 < ends[i] <= t1]
    ended = len(in_interval)
    completed = sum(1 for i in in_interval if qs[i].result.ok)
    if measured_s < STEADY_MIN_SHARE * span_s or arrived < STEADY_MIN_REQUESTS or measured_s <= 0:
        drain_s = (max(ends) - t1) / 1e9
        if len(qs) >= STEADY_MIN_REQUESTS and ramp_s is not None and drain_s > max(span_s, DRAIN_RAMPS * ramp_s):
            return SteadyState(
                state="not sustained", warmup_s=warmup_s, ramp_s=ramp_s, measured_s=0.0, arrived=arrived, ended=ended,
                completed=completed, backlog_growth=arrived - ended, backlog_limit=None,
                note=(f"not sustained: its {len(qs)} requests arrived over {span_s:.3g} s and kept coming back for "
                      f"{drain_s:.3g} s after the last arrival, over {DRAIN_RAMPS:g} times the {ramp_s:.3g} s the first "
                      "took: the queue grew, so this rate is over what the server serves. The window is too short "
                      "for a steady interval: its figures are the whole window's"))
        why = (f"the first requests took {ramp_s:.3g} s to come back, so no steady interval is left in its "
               f"{span_s:.3g} s of arrivals" if ramp_s is not None and measured_s < STEADY_MIN_SHARE * span_s
               else f"{arrived} requests arrived after its ramp (at least {STEADY_MIN_REQUESTS} needed)")
        return SteadyState(state="too short", warmup_s=warmup_s, ramp_s=ramp_s, measured_s=0.0, arrived=arrived,
                           ended=ended, completed=completed, backlog_growth=arrived - ended, backlog_limit=None,
                           note=(f"too short for steady state: {why}; its figures are the whole window's, ramp and "
                                 "drain included, and it is left out of the knee. Offer the rate for longer "
                                 "(--duration)"))
    rate = arrived / measured_s
    cv2 = 1.0 / w.burstiness if w.arrival == "gamma" and w.burstiness else 1.0
    limit = max(BACKLOG_SHARE * arrived, BACKLOG_Z * math.sqrt(2 * rate * (ramp_s or 0.0) * max(1.0, cv2) + 1))
    growth = arrived - ended
    if growth <= limit:
        return SteadyState(state="steady", warmup_s=warmup_s, ramp_s=ramp_s, measured_s=measured_s, arrived=arrived,
                           ended=ended, completed=completed, backlog_growth=growth, backlog_limit=limit)
    held = f" (--max-concurrency {w.max_concurrency} held the rest back)" if w.max_concurrency else ""
    return SteadyState(
        state="not sustained", warmup_s=warmup_s, ramp_s=ramp_s, measured_s=measured_s, arrived=arrived, ended=ended,
        completed=completed, backlog_growth=growth, backlog_limit=limit,
        note=(f"not sustained: {arrived / measured_s:.3g} req/s arrived over its {measured_s:.3g} s steady interval "
              f"and {ended / measured_s:.3g} req/s ended{held}; the requests in flight grew by {growth} (chance "
              f"allows {limit:.0f}): the queue grows, so this rate is over what the server serves and its latency "
              "figures depend on the window's length"))


def _window(w: LoadWindow, qs: list[LoadRequest]) -> LoadWindowSummary:
    lts = [load_timing(q) for q in qs]
    ends = [q.result.done_ns or q.result.sent_ns for q in qs]
    window_s = max(1e-9, (max(ends, default=w.ended_ns) - w.started_ns) / 1e9)
    intended = [q.result.scheduled_ns or q.result.sent_ns for q in qs]
    sent = sorted(q.result.sent_ns for q in qs)
    n = len(qs)
    sched_rate = (n - 1) / ((max(intended) - min(intended)) / 1e9) if n > 1 and max(intended) > min(intended) else None
    send_rate = (n - 1) / ((sent[-1] - sent[0]) / 1e9) if n > 1 and sent[-1] > sent[0] else None
    waits = [lt.slot_wait_s for lt in lts if lt.slot_wait_s is not None]
    lag = describe([lt.send_lag_s for lt in lts])
    kept, note = True, None
    scheduled = w.mode in ("rate", "trace")  # the saturation burst has no schedule to keep
    if scheduled and lag is not None and lag.p99 is not None and lag.p99 > SCHEDULE_LAG_P99_MAX_S:
        kept, note = False, (f"send lag p99 {lag.p99 * 1e3:.1f} ms (over {SCHEDULE_LAG_P99_MAX_S * 1e3:g} ms): the "
                             "client could not send on schedule, so the server saw less load than offered. "
                             "Remedy: a quieter client host, a lower rate, or more client processes")
    elif (scheduled and n >= 20 and sched_rate and send_rate is not None
          and send_rate < SCHEDULE_RATE_MIN * sched_rate):
        kept, note = False, (f"sent {send_rate:.4g} req/s against {sched_rate:.4g} scheduled "
                             f"({send_rate / sched_rate:.1%}): the client fell behind its schedule")
    steady = _steady(w, qs)
    # what the figures are of: the steady interval (its arrivals for latency, its ends for throughput), or all
    if steady is not None and steady.measured_s > 0:
        t1 = max(intended)
        t0 = t1 - int(steady.measured_s * 1e9)
        picked = [i for i in range(n) if t0 < intended[i] <= t1]
        done_in = [i for i in range(n) if t0 < ends[i] <= t1 and qs[i].result.ok]
        per_s = steady.measured_s
    else:
        picked = list(range(n))
        done_in = [i for i in range(n) if qs[i].result.ok]
        per_s = window_s
    ok = [lts[i] for i in picked if qs[i].result.ok]
    slo = None
    if w.slo is not None:
        missed: dict[str, int] = defaultdict(int)
        met_ids = set()
        for i in range(n):
            check = meets_slo(w.slo, ok=qs[i].result.ok, ttft_s=lts[i].ttft_response_s,
                              itl_s=lts[i].timing.itl_mean_s, e2e_s=lts[i].e2e_response_s)
            if check.met:
                met_ids.add(i)
            elif i in picked:
                for missed_metric in check.missed:
                    missed[missed_metric] += 1
        met = sum(1 for i in picked if i in met_ids)
        slo = SloResult(met=met, fraction=met / len(picked) if picked else 0.0,
                        goodput_rps=m.goodput_rps(sum(1 for i in done_in if i in met_ids), per_s), missed=dict(missed),
                        requests=len(picked))
    completed = [q for q in qs if q.result.ok]
    sessions = _sessions(w, qs, lts, window_s)
    return LoadWindowSummary(
        window=w.window, mode=w.mode, arrival=w.arrival, burstiness=w.burstiness, offered_rate_rps=w.offered_rate_rps,
        max_concurrency=w.max_concurrency, requests=n, failed=sum(1 for q in qs if not q.result.ok),
        window_s=window_s, scheduled_rate_rps=sched_rate, achieved_send_rate_rps=send_rate,
        throughput_rps=m.throughput_rps(len(done_in), per_s),
        output_tok_s=m.output_tok_s(sum(lts[i].timing.output_tokens for i in done_in), per_s),
        throughput_window_rps=m.throughput_rps(len(completed), window_s),
        send_lag_s=lag, slot_wait_s=describe(waits), slot_waits=len(waits),
        ttft_s=describe([lt.timing.ttft_s for lt in ok if lt.timing.ttft_s is not None]),
        ttft_response_s=describe([lt.ttft_response_s for lt in ok if lt.ttft_response_s is not None]),
        itl_s=describe([lt.timing.itl_mean_s for lt in ok if lt.timing.itl_mean_s is not None]),
        e2e_s=describe([lt.timing.e2e_latency_s for lt in ok if lt.timing.e2e_latency_s is not None]),
        e2e_response_s=describe([lt.e2e_response_s for lt in ok if lt.e2e_response_s is not None]),
        slo=slo, schedule_kept=kept, schedule_note=note, steady=steady, input_lengths=_input_lengths(qs),
        **sessions)


def _sessions(w: LoadWindow, qs: list[LoadRequest], lts: list[LoadTiming], window_s: float) -> dict[str, object]:
    """A `--sessions` window's sessions per second and per-turn figures (nothing for other windows)."""
    if w.sessions is None:
        return {}
    by_session: dict[int, list[LoadRequest]] = defaultdict(list)
    by_turn: dict[int, list[tuple[LoadRequest, LoadTiming]]] = defaultdict(list)
    for q, lt in zip(qs, lts, strict=True):
        by_session[q.session or 0].append(q)
        by_turn[q.turn or 0].append((q, lt))
    turns = w.turns or 1
    done = sum(1 for reqs in by_session.values() if len(reqs) == turns and all(q.result.ok for q in reqs))
    per_turn = []
    for t in sorted(by_turn):
        items = by_turn[t]
        ok = [(q, lt) for q, lt in items if q.result.ok]
        per_turn.append(TurnSummary(
            turn=t, requests=len(items), failed=len(items) - len(ok),
            prompt_tokens=describe([q.result.prompt_tokens for q, _ in ok if q.result.prompt_tokens is not None]),
            ttft_response_s=describe([lt.ttft_response_s for _, lt in ok if lt.ttft_response_s is not None]),
            itl_s=describe([lt.timing.itl_mean_s for _, lt in ok if lt.timing.itl_mean_s is not None]),
            e2e_response_s=describe([lt.e2e_response_s for _, lt in ok if lt.e2e_response_s is not None])))
    return {"sessions": w.sessions, "turns": turns, "sessions_completed": done, "sessions_per_s": done / window_s,
            "per_turn": per_turn}


def _input_lengths(qs: list[LoadRequest]) -> InputLengths | None:
    """Sent prompt lengths against the lengths asked: rigbench's count of the rendered prompt where it could
    make one (the server's tokenizer and template), else the server's count; a session's later turns are left
    out (their target is the new message alone). The server's count is checked against rigbench's by the
    traffic check (honesty/), not here."""
    first = [q for q in qs if not q.turn and q.result.ok]
    if not first:
        return None
    from_server = from_rigbench = unknown = exact = 0
    sent: list[int] = []
    dev: list[float] = []
    for q in first:
        got = q.input_tokens_measured
        if got is not None:
            from_rigbench += 1
        elif q.result.prompt_tokens is not None:
            got = q.result.prompt_tokens
            from_server += 1
        else:
            unknown += 1
            continue
        sent.append(got)
        dev.append((got - q.input_tokens_target) / q.input_tokens_target)
        exact += got == q.input_tokens_target
    targets = [q.input_tokens_target for q in first]
    return InputLengths(requests=len(first), from_server=from_server, from_rigbench=from_rigbench, unknown=unknown,
                        exact=exact, target_min=min(targets), target_max=max(targets),
                        sent_min=min(sent) if sent else None, sent_max=max(sent) if sent else None,
                        deviation=describe(dev),
                        tokenizer=all(q.input_tokens_measured is not None for q in first))


def _lengths_off(s: InputLengths) -> bool:
    return s.off > 0 or s.unknown > 0


def _span(lo: int | None, hi: int | None) -> str:
    return f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"


def _lengths_warning(r: LoadWindowSummary) -> str:
    """The finding of prompt lengths that did not come out as asked: how far off, and why."""
    s = r.input_lengths
    assert s is not None
    where = f"load {r.window} ({_rate(r)})"
    asked = _span(s.target_min, s.target_max)
    if s.off == 0:  # nothing known to be off, but some not known at all
        return (f"{where}: input lengths not measured for {s.unknown} of {s.requests} requests: the server reports no "
                "prompt token count and has no tokenizer rigbench can use, so those prompts were sized at about 4 "
                f"characters per token for the {asked} tokens asked; treat input lengths as approximate")
    d = s.deviation
    spread = (f" ({d.min:+.0%} to {d.max:+.0%}, median {d.median:+.0%})" if d is not None and d.min != d.max
              else f" ({d.median:+.0%})" if d is not None else "")
    why = ("the server has no tokenizer rigbench can use, so prompts were sized at about 4 characters per token"
           if not s.tokenizer else
           "a length below the rendered opening (chat template, request tag and task) cannot be met, and a server "
           "that counts otherwise than its tokenizer shows differs too")
    return (f"{where}: input lengths off target in {s.off} of {s.requests} requests: asked {asked} tokens, sent "
            f"{_span(s.sent_min, s.sent_max)}{spread}; {why}. Per request: input_tokens_target and input_tokens in "
            "--csv/--jsonl")
