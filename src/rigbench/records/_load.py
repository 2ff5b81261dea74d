"""Records the load suite writes (rate mode: open-loop arrivals; raw observations only).

A request's intended start is its `StreamResult.scheduled_ns` (from the arrival schedule) and its
actual send is `sent_ns`: service time is measured from the send, response time from the intended
start, so a client that falls behind its schedule cannot hide the queueing it caused.
"""

from __future__ import annotations

from typing import Literal

from rigbench.records._base import Input, Record
from rigbench.records._stream import StreamResult

__all__ = ["LoadMode", "LoadRequest", "LoadWindow", "SloTargets"]

LoadMode = Literal["rate", "saturation", "trace"]
Arrival = Literal["constant", "poisson", "gamma"]


class SloTargets(Input):
    """Latency targets a request must meet to count towards goodput (None: no target on that metric)."""

    ttft_s: float | None = None  # intended start -> first generated token
    itl_s: float | None = None  # the request's mean inter-token latency
    e2e_s: float | None = None  # intended start -> end of the stream


class LoadRequest(Record):
    """One request of one load window: sent at its scheduled time whether or not earlier ones finished."""

    kind: Literal["load_request"] = "load_request"
    unit_id: str  # "load/<window>/i<index>"
    window: str  # "saturation", "trace", or "r<k>" for the k-th rate (0-based)
    index: int  # position in the window's schedule
    # When a concurrency slot became free for it (`max_concurrency`); None: no cap, or no wait.
    slot_ns: int | None = None
    # Multi-turn sessions: which session and turn (0-based). Turn t > 0 sends the session's history (every
    # earlier prompt and reply) plus a new user message; its intended start is the end of turn t - 1.
    session: int | None = None
    turn: int | None = None
    input_tokens_target: int  # the rendered prompt; a later session turn: its new user message, rendered alone
    output_tokens_target: int
    input_tokens_measured: int | None  # rendered-prompt tokens, measured before the window (None: a later turn)
    # As SpeedRequest: the most a prefix cache may honestly reuse. A later session turn: its history, as the
    # server counted it (the previous turn's prompt + completion tokens): shared by design.
    input_tokens_shared_max: int | None = None
    result: StreamResult  # scheduled_ns: intended start; sent_ns: actual send


class LoadWindow(Record):
    """One window of offered load: a rate (open loop), the saturation burst, or a replayed trace. Written
    last: it marks the window complete for resume."""

    kind: Literal["load_window"] = "load_window"
    unit_id: str  # "load/<window>"
    window: str
    mode: LoadMode
    arrival: Arrival | None  # None for the saturation burst (every request at once)
    burstiness: float | None  # gamma shape (1.0 = Poisson)
    offered_rate_rps: float | None  # None: as fast as the server takes them (saturation); a trace: its mean rate
    max_concurrency: int | None
    requests: int
    failed: int
    started_ns: int  # the schedule's zero: the first request's intended start
    ended_ns: int  # the last request's end
    slo: SloTargets | None = None
    sessions: int | None = None  # multi-turn: sessions started at `offered_rate_rps` (requests: turns sent)
    turns: int | None = None
