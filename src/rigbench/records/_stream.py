"""Raw observations of one request, as the client saw it. No derived metrics here: those live in
`rigbench.analysis` and are computed from these fields, so a new metric never needs a re-run.

All `*_ns` fields are `time.perf_counter_ns()` stamps on the client's monotonic clock; offsets
within one request are meaningful, absolute values are not.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rigbench.records._base import Frozen

__all__ = ["ArrivalStamps", "ChunkKind", "RequestError", "RequestErrorKind", "RetryAttempt", "StreamResult", "send_lag_ns"]

RequestErrorKind = Literal[
    "connect",  # could not open a connection
    "timeout",  # no byte for longer than the read timeout (aiohttp path), or no connection in time
    "idle_timeout",  # no generated token for longer than the idle deadline (keep-alive comments do not count)
    "total_timeout",  # the request ran longer than its total deadline
    "http_status",  # a non-2xx status; `http_status` and `body` say which and why
    "disconnect",  # the server closed the stream before [DONE] / finish_reason
    "malformed_sse",  # a data line that is not JSON, or JSON without the OpenAI shape
    "not_openai",  # a 2xx response that is not an OpenAI chat completion at all
    "server_error_event",  # an `error` object sent inside the stream
]


# One letter per chunk in StreamResult.chunk_kind: what the chunk carried.
#   c: answer content   r: reasoning   t: tool-call delta   m: more than one of those
ChunkKind = Literal["c", "r", "t", "m"]


class RequestError(Frozen):
    kind: RequestErrorKind
    message: str
    http_status: int | None = None
    body: str | None = None  # first 2 KB of the error body, for the evidence


class ArrivalStamps(Frozen):
    """Which clock said when the response's reads arrived (docs/metrics.md, "arrival")."""

    source: Literal["kernel", "user"]  # kernel: SO_TIMESTAMPNS on every read; user: rigbench's own stamps
    reason: str | None = None  # why user-space stamps only (TLS, OS, aiohttp path, a read without one)
    # CLOCK_REALTIME - perf_counter used to convert the kernel's stamps, and the half width of
    # its tightest reading: raw kernel stamp = chunk_kernel_ns + clock_offset_ns.
    clock_offset_ns: int | None = None
    clock_uncertainty_ns: int | None = None


class RetryAttempt(Frozen):
    """One attempt the server turned away and rigbench sent again (`--retry-on`): never timed as latency.

    The request's own stamps (`StreamResult.sent_ns`...) are the last attempt's; these say what came before.
    """

    attempt: int  # 1: the first send
    http_status: int
    retry_after: str | None = None  # the header as sent (first 64 characters), None when absent
    wait_asked_s: float | None = None  # what Retry-After asked for; None: absent or unparsable (backoff used)
    wait_s: float  # the wait taken before the next attempt, measured
    sent_ns: int  # this attempt's send
    connect_ns: int | None = None  # a connection was opened for it from here
    done_ns: int  # its answer ended


class StreamResult(Frozen):
    """Everything one streamed chat completion produced, timestamped per chunk."""

    sent_ns: int  # just before the request was written
    # When the caller meant to send it (defaults to the call of stream_chat); sent - scheduled,
    # less connection opening, is the client's send lag.
    scheduled_ns: int | None = None
    connect_ns: int | None = None  # a new connection was opened from here; None: one was reused
    headers_ns: int | None = None  # response status line + headers received
    first_event_ns: int | None = None  # first SSE data event of any kind (role-only included)
    done_ns: int | None = None  # stream ended ([DONE], close, or error)
    first_content_ns: int | None = None  # first chunk carrying answer content (not reasoning/tools)
    response_id: str | None = None  # the `id` the server gave the completion

    # One entry per *generating* chunk: a data event whose delta carried text or a tool call.
    # Role-only and empty events are not chunks (they are counted in `empty_events`).
    chunk_ns: list[int] = Field(default_factory=list)
    chunk_chars: list[int] = Field(default_factory=list)
    chunk_kind: str = ""  # one ChunkKind letter per chunk
    # Events that arrived in the same socket read as the previous event (same timestamp by
    # construction); lets analysis tell coalesced reads from real zero gaps.
    coalesced_events: int = 0
    # The kernel's arrival stamp of the read that delivered each chunk (perf_counter clock, as
    # chunk_ns is rigbench's own stamp of that read); empty when `arrival` says user-space stamps.
    # Records of format <= 4 have neither: `arrival` None reads as "not recorded".
    chunk_kernel_ns: list[int] = Field(default_factory=list)
    first_event_kernel_ns: int | None = None
    arrival: ArrivalStamps | None = None
    empty_events: int = 0  # role-only or empty deltas
    comment_events: int = 0  # SSE comments / keep-alives

    content: str = ""
    reasoning: str = ""
    reasoning_field: str | None = None  # "reasoning_content" | "reasoning" | None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None  # llama.cpp server-side timings, when sent
    model: str | None = None
    http_status: int | None = None
    error: RequestError | None = None
    # `--retry-on`: the attempts before this one that the server turned away (format 9; older results: none)
    retries: list[RetryAttempt] = Field(default_factory=list)
    retry_stopped: str | None = None  # why a still-refused request was not retried again (its budget)

    @property
    def ok(self) -> bool:
        return self.error is None and self.http_status == 200

    @property
    def completion_tokens(self) -> int | None:
        if self.usage and isinstance(self.usage.get("completion_tokens"), int):
            return int(self.usage["completion_tokens"])
        if self.timings and isinstance(self.timings.get("predicted_n"), int):
            return int(self.timings["predicted_n"])
        return None

    @property
    def prompt_tokens(self) -> int | None:
        if self.usage and isinstance(self.usage.get("prompt_tokens"), int):
            return int(self.usage["prompt_tokens"])
        return None


def send_lag_ns(ready_ns: int, sent_ns: int, connect_ns: int | None) -> int:
    """The client's lateness in sending one request (docs/metrics.md, "Send lag"): its send less the time it spent
    opening a connection (that is the network's), minus the moment it was ready to go (its intended start, or
    when a `max_concurrency` slot freed); never below zero.

    The one formula of the send lag: the client's self-check (while the run goes) and the analysis (after it,
    `rigbench.analysis`'s `send_lag_s` metric) both call it. It lives in records, below both, because the
    client and the analysis sit on one layer and may not import each other."""
    acted = connect_ns if connect_ns is not None else sent_ns
    return max(0, acted - ready_ns)
