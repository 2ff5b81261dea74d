"""Each metric rigbench reports, defined once (docs/metrics.md, "Where each metric is defined").

A metric is one function here, registered with `@metric`: its name as docs/metrics.md writes it, its unit and its
formula in words. `METRICS` finds them by name. The summaries (`request_timing`, `load_timing`, the speed row, the
load window) call these functions and keep their results as fields, so every report and export reads the one
definition; `tests/unit/test_metrics.py` tests each metric by itself and checks that docs/metrics.md names the code
that defines it.

Scopes: `request` metrics take one request's `Stream` (its stamps already reduced to arrivals); `schedule` metrics
take a request's place in its schedule (`Schedule`); `window` metrics take figures over a window, a batch or a row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from rigbench.records import send_lag_ns

__all__ = ["METRICS", "Metric", "Schedule", "Stream", "metric"]

Scope = Literal["request", "schedule", "window"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Metric:
    name: str  # as docs/metrics.md names it (the field the summaries keep it in)
    title: str  # the words docs/metrics.md and the reports use for it ("TTFT", "goodput")
    unit: str
    formula: str  # the definition in words, as docs/metrics.md gives it
    scope: Scope
    compute: Callable[..., Any]

    @property
    def code(self) -> str:
        """Where it is defined, as docs/metrics.md writes a place: `analysis/_metrics.py: ttft_s`."""
        module = self.compute.__module__.removeprefix("rigbench.").replace(".", "/")
        return f"{module}.py: {self.compute.__name__}"


METRICS: dict[str, Metric] = {}


def metric(name: str, title: str, unit: str, formula: str, scope: Scope = "request") -> Callable[[F], F]:
    """Register the function below as the one definition of the metric `name`."""

    def register(f: F) -> F:
        if name in METRICS:
            raise ValueError(f"metric {name!r} is defined twice: {METRICS[name].code} and {f.__module__}.{f.__name__}")
        METRICS[name] = Metric(name, title, unit, formula, scope, f)
        return f

    return register


@dataclass(frozen=True)
class Stream:
    """One request's stamps as every per-request metric reads them (built by `request_timing`)."""

    sent_ns: int
    done_ns: int | None
    arrivals_ns: Sequence[int]  # each arrival (chunks of one read merged), kernel stamp where recorded
    arrival_tokens: Sequence[int]  # the tokens each arrival carried
    output_tokens: int
    multi_token_chunks: bool
    content_ns: int | None  # arrival of the first answer-content chunk
    first_event_ns: int | None  # the first SSE event of any kind (kernel stamp where recorded)
    output_tokens_target: int | None = None


def _since_sent(s: Stream, ns: int | None) -> float | None:
    return (ns - s.sent_ns) / 1e9 if ns is not None else None


@metric("first_chunk_s", "first chunk", "s", "arrival[0] - sent_ns, always (what TTFT would be)")
def first_chunk_s(s: Stream) -> float | None:
    return _since_sent(s, s.arrivals_ns[0]) if s.arrivals_ns else None


@metric("ttft_s", "TTFT", "s", "arrival[0] - sent_ns: request sent to the first chunk carrying generated text; "
        "None when multi_token_chunks")
def ttft_s(s: Stream) -> float | None:
    return None if s.multi_token_chunks else first_chunk_s(s)


@metric("ttft_content_s", "TTFT to content", "s", "arrival of the first answer-content chunk - sent_ns")
def ttft_content_s(s: Stream) -> float | None:
    return _since_sent(s, s.content_ns)


@metric("first_event_s", "first event", "s", "first_event_kernel_ns (else first_event_ns) - sent_ns")
def first_event_s(s: Stream) -> float | None:
    return _since_sent(s, s.first_event_ns)


@metric("wall_s", "wall time", "s", "last chunk - sent_ns")
def wall_s(s: Stream) -> float | None:
    return _since_sent(s, s.arrivals_ns[-1]) if s.arrivals_ns else None


class _Ends(Protocol):
    @property
    def sent_ns(self) -> int: ...
    @property
    def done_ns(self) -> int | None: ...


@metric("e2e_latency_s", "e2e latency", "s", "done_ns - sent_ns")
def e2e_latency_s(s: _Ends) -> float | None:
    """Of a `Stream`, or of a `StreamResult` as it is (the quality suites time each answer so)."""
    return (s.done_ns - s.sent_ns) / 1e9 if s.done_ns is not None else None


@metric("e2e_tok_s", "e2e tok/s", "tok/s", "N / (last chunk - sent_ns)")
def e2e_tok_s(s: Stream) -> float | None:
    wall = wall_s(s)
    return s.output_tokens / wall if wall is not None and wall > 0 else None


@metric("itl_mean_s", "ITL per request", "s", "(last chunk - first chunk) / (N - tokens of the first arrival); None with a single arrival")
def itl_mean_s(s: Stream) -> float | None:
    if len(s.arrivals_ns) < 2:
        return None
    span = (s.arrivals_ns[-1] - s.arrivals_ns[0]) / 1e9
    decode_tokens = s.output_tokens - s.arrival_tokens[0]
    return span / decode_tokens if decode_tokens > 0 and span > 0 else None


@metric("decode_tok_s", "decode tok/s", "tok/s", "(N - tokens of the first arrival) / (last chunk - first chunk) = 1 / itl_mean_s; "
        "None with a single arrival")
def decode_tok_s(s: Stream) -> float | None:
    itl = itl_mean_s(s)
    return 1 / itl if itl else None


@metric("itl_s", "ITL per token", "s", "per token: each arrival's gap to the previous arrival divided evenly over its tokens")
def itl_s(s: Stream) -> list[float]:
    gaps: list[float] = []
    stamps, tokens = s.arrivals_ns, s.arrival_tokens
    for i in range(1, len(stamps)):
        k = tokens[i]
        gaps.extend([(stamps[i] - stamps[i - 1]) / 1e9 / k] * k)
    return gaps


@metric("attainment", "attainment", "ratio", "N / output tokens asked")
def attainment(s: Stream) -> float | None:
    return s.output_tokens / s.output_tokens_target if s.output_tokens_target else None


@dataclass(frozen=True)
class Schedule:
    """A request's place in its schedule, as the rate-mode metrics read it (built by `load_timing`)."""

    intended_ns: int  # intended start (the send, where there was no schedule)
    ready_ns: int  # the intended start, or when a `max_concurrency` slot freed, whichever is later
    sent_ns: int  # the answered attempt's send
    first_sent_ns: int  # the first attempt's send
    first_connect_ns: int | None  # the first attempt opened a connection from here (None: one was reused)


@metric("send_lag_s", "send lag", "s", "actual send - (intended start, or the moment a slot freed), less the time spent "
        "opening a connection; at the first attempt", scope="schedule")
def send_lag_s(q: Schedule) -> float:
    return send_lag_ns(q.ready_ns, q.first_sent_ns, q.first_connect_ns) / 1e9


def _behind_s(q: Schedule) -> float:
    # from the intended start to the send of the attempt that was answered: retry waits and refused attempts count
    return (q.sent_ns - q.intended_ns) / 1e9


@metric("ttft_response_s", "TTFT response time", "s", "intended start -> first generated chunk (first_chunk_s + send - intended start)",
        scope="schedule")
def ttft_response_s(q: Schedule, first_chunk: float | None) -> float | None:
    """`first_chunk`: the request's `first_chunk_s`."""
    return first_chunk + _behind_s(q) if first_chunk is not None else None


@metric("e2e_response_s", "e2e response time", "s", "intended start -> end of the stream (e2e_latency_s + send - intended start)",
        scope="schedule")
def e2e_response_s(q: Schedule, e2e_latency: float | None) -> float | None:
    """`e2e_latency`: the request's `e2e_latency_s`."""
    return e2e_latency + _behind_s(q) if e2e_latency is not None else None


@metric("throughput_rps", "throughput", "req/s", "requests that ended (succeeded) in the steady interval / its length "
        "(else the whole window)", scope="window")
def throughput_rps(completed: int, interval_s: float) -> float:
    return completed / interval_s


@metric("output_tok_s", "output tok/s", "tok/s", "output tokens of the requests that ended (succeeded) in the steady interval "
        "/ its length (else the whole window)", scope="window")
def output_tok_s(output_tokens: int, interval_s: float) -> float:
    return output_tokens / interval_s


@metric("goodput_rps", "goodput", "req/s", "requests that met the SLO and ended in the steady interval / its length "
        "(else the whole window)", scope="window")
def goodput_rps(met_and_ended: int, interval_s: float) -> float:
    return met_and_ended / interval_s


@metric("aggregate_tok_s", "aggregate tok/s", "tok/s", "all output tokens of a batch / its wall time (ended_ns - started_ns)",
        scope="window")
def aggregate_tok_s(output_tokens: int, started_ns: int, ended_ns: int) -> float:
    return output_tokens / ((ended_ns - started_ns) / 1e9)


@metric("prefill_share", "prefill share", "ratio", "median first_chunk_s / median wall_s over a row's requests", scope="window")
def prefill_share(first_chunk_median_s: float, wall_median_s: float) -> float | None:
    return first_chunk_median_s / wall_median_s if wall_median_s > 0 else None
