"""Rate-mode figures of the load suite's windows (docs/metrics.md, "Rate mode").

Per window:
- service time: TTFT, ITL and end-to-end latency measured from the actual send (as the speed suite);
- response time: TTFT and end-to-end latency measured from the request's intended start (its place in
  the arrival schedule): what a user waiting in that queue sees; no coordinated omission;
- schedule adherence: client send lag (actual send - intended start, or - the moment a
  `max_concurrency` slot freed), achieved send rate against the scheduled one;
- throughput: completed requests and output tokens per second of the window (intended zero to last end);
- goodput under the run's SLO (analysis/_goodput.py), and the sweep's knee.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import Field

from rigbench.analysis._goodput import knee_rate, meets_slo
from rigbench.analysis._host import assess_host
from rigbench.analysis._stats import Stat, describe
from rigbench.analysis._timing import RequestTiming, request_timing
from rigbench.records import Frozen, HostConditions, LoadRequest, LoadWindow, SloTargets
from rigbench.store import RunReader

__all__ = ["SCHEDULE_LAG_P99_MAX_S", "SCHEDULE_RATE_MIN", "LoadSummary", "LoadWindowSummary", "load_timing",
           "summarize_load"]

# The client kept its schedule when its send lag p99 is at most this...
SCHEDULE_LAG_P99_MAX_S = 0.005
# ...and it sent at no less than this fraction of the scheduled rate (windows of 20+ requests).
SCHEDULE_RATE_MIN = 0.98


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
    ready = max(intended, q.slot_ns) if q.slot_ns is not None else intended
    # from the intended start to the send of the attempt that was answered: retry waits (--retry-on) and
    # the refused attempts count in the response time; the service time is the last attempt's alone
    behind = (res.sent_ns - intended) / 1e9
    # the client's part of the delay, at the first attempt: opening a connection (when one was opened) is the
    # network's, as in the self-check's send lag; it still counts in the response time
    first = res.retries[0] if res.retries else res
    acted = first.connect_ns if first.connect_ns is not None else first.sent_ns
    return LoadTiming(
        timing=t, send_lag_s=max(0.0, (acted - ready) / 1e9),
        slot_wait_s=(q.slot_ns - intended) / 1e9 if q.slot_ns is not None else None,
        ttft_response_s=t.first_chunk_s + behind if t.first_chunk_s is not None else None,
        e2e_response_s=t.e2e_latency_s + behind if t.e2e_latency_s is not None else None)


class SloResult(Frozen):
    met: int  # requests that met every target
    fraction: float  # met / requests (failed requests count as missed)
    goodput_rps: float  # met / window seconds
    missed: dict[str, int]  # per metric (and "failed"): requests that missed it


class LoadWindowSummary(Frozen):
    window: str  # "saturation" or "r<k>"
    mode: str  # rate | saturation
    arrival: str | None
    burstiness: float | None
    offered_rate_rps: float | None  # None: the saturation burst
    max_concurrency: int | None
    requests: int
    failed: int
    window_s: float  # intended zero -> last end
    scheduled_rate_rps: float | None  # (n - 1) / (last intended start - first)
    achieved_send_rate_rps: float | None  # (n - 1) / (last send - first send)
    throughput_rps: float  # completed requests / window_s
    output_tok_s: float  # output tokens of completed requests / window_s
    send_lag_s: Stat | None
    slot_wait_s: Stat | None  # only requests that waited for a slot
    slot_waits: int
    ttft_s: Stat | None  # service: from the send (withheld for multi-token chunks, as the speed suite)
    ttft_response_s: Stat | None  # response: intended start -> first generated chunk
    itl_s: Stat | None  # per-request mean ITL
    e2e_s: Stat | None  # service
    e2e_response_s: Stat | None  # response
    slo: SloResult | None = None
    schedule_kept: bool = True
    schedule_note: str | None = None  # why not, when not


class LoadSummary(Frozen):
    windows: list[LoadWindowSummary]
    slo: SloTargets | None
    attainment: float  # the knee's threshold
    knee_rps: float | None  # highest offered rate meeting the attainment; None: none did (or no SLO, one rate)
    warnings: list[str] = Field(default_factory=list)

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
    knee = None
    if slo is not None and sum(1 for r in rows if r.mode == "rate") > 1:  # a knee needs a curve: a sweep
        knee = knee_rate([(r.offered_rate_rps, r.slo.fraction) for r in rows
                          if r.offered_rate_rps is not None and r.slo is not None], attainment)
    busy = _busy_windows(reader)
    warnings = [f"LATE SENDS: load {r.window} ({_rate(r)}): {r.schedule_note}. The host was busy during this window "
                f"({busy[r.window]}): other processes, not rigbench alone, held the sends back"
                if r.window in busy else f"CLIENT-BOUND: load {r.window} ({_rate(r)}): {r.schedule_note}"
                for r in rows if not r.schedule_kept]
    if slo is not None and len([r for r in rows if r.mode == "rate"]) > 1 and knee is None:
        warnings.append(f"no measured rate met the SLO for {attainment:.0%} of its requests: the knee lies below "
                        "the lowest rate measured; sweep lower rates (--rate) to find it")
    return LoadSummary(windows=rows, slo=slo, attainment=attainment, knee_rps=knee, warnings=warnings)


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
    return f"{r.offered_rate_rps:.3g} req/s offered" if r.offered_rate_rps is not None else "saturation burst"


def _window(w: LoadWindow, qs: list[LoadRequest]) -> LoadWindowSummary:
    lts = [load_timing(q) for q in qs]
    ok = [(q, lt) for q, lt in zip(qs, lts, strict=True) if q.result.ok]
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
    slo = None
    if w.slo is not None:
        missed: dict[str, int] = defaultdict(int)
        met = 0
        for q, lt in zip(qs, lts, strict=True):
            check = meets_slo(w.slo, ok=q.result.ok, ttft_s=lt.ttft_response_s, itl_s=lt.timing.itl_mean_s,
                              e2e_s=lt.e2e_response_s)
            met += check.met
            for m in check.missed:
                missed[m] += 1
        slo = SloResult(met=met, fraction=met / n if n else 0.0, goodput_rps=met / window_s, missed=dict(missed))
    return LoadWindowSummary(
        window=w.window, mode=w.mode, arrival=w.arrival, burstiness=w.burstiness, offered_rate_rps=w.offered_rate_rps,
        max_concurrency=w.max_concurrency, requests=n, failed=sum(1 for q in qs if not q.result.ok),
        window_s=window_s, scheduled_rate_rps=sched_rate, achieved_send_rate_rps=send_rate,
        throughput_rps=len(ok) / window_s, output_tok_s=sum(lt.timing.output_tokens for _, lt in ok) / window_s,
        send_lag_s=lag, slot_wait_s=describe(waits), slot_waits=len(waits),
        ttft_s=describe([lt.timing.ttft_s for _, lt in ok if lt.timing.ttft_s is not None]),
        ttft_response_s=describe([lt.ttft_response_s for _, lt in ok if lt.ttft_response_s is not None]),
        itl_s=describe([lt.timing.itl_mean_s for _, lt in ok if lt.timing.itl_mean_s is not None]),
        e2e_s=describe([lt.timing.e2e_latency_s for _, lt in ok if lt.timing.e2e_latency_s is not None]),
        e2e_response_s=describe([lt.e2e_response_s for _, lt in ok if lt.e2e_response_s is not None]),
        slo=slo, schedule_kept=kept, schedule_note=note)
