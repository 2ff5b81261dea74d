"""Retrying a request the server turned away (`rigbench run --retry-on 429,503`): one settings object,
its defaults beside it, the decision after each refused attempt, and the wait it asks (`after_attempt`).

Off unless asked: by default a 429 or 503 is a typed rejected record, as a benchmark should see it.
With `statuses`, a request answered with one of those statuses waits what the server's `Retry-After` asks
(delta-seconds or an HTTP-date; absent or unparsable: `BACKOFF_S` doubled per retry) and is sent
again, within a budget per request: at most `max_retries` retries and `max_wait_s` seconds of waiting.
A wait longer than what is left of the budget ends the retries at once, without sleeping (adversary:
a server answering `Retry-After: 1000000000000`, a negative number, NaN, or a megabyte of header).
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import re
import time
from datetime import UTC
from typing import NamedTuple

from pydantic import Field, field_validator

from rigbench.records import Input, RetryAttempt

__all__ = ["BACKOFF_S", "RETRY_AFTER_CHARS", "RetryDecision", "RetryPolicy", "parse_retry_after", "parse_statuses"]

_perf_ns = time.perf_counter_ns

# The wait before retry k (1-based) when the server gives no usable Retry-After: 1, 2, 4, 8... s.
BACKOFF_S = 1.0
# A Retry-After value is kept (and parsed) up to this many characters; a longer one is unparsable.
RETRY_AFTER_CHARS = 64
_DELTA = re.compile(r"\d+(\.\d+)?")  # at most RETRY_AFTER_CHARS long: float() stays finite


def parse_statuses(text: str) -> list[int]:
    """`--retry-on 429,503`: HTTP statuses, 4xx or 5xx each, no empty item. Raises ValueError saying why."""
    items = text.split(",")
    if not text.strip() or any(not x.strip() for x in items):
        raise ValueError(f"takes comma-separated HTTP statuses, e.g. 429,503; got {text!r}")
    out: list[int] = []
    for x in items:
        try:
            code = int(x.strip())
        except ValueError:
            raise ValueError(f"takes comma-separated HTTP statuses, e.g. 429,503; {x.strip()!r} is not a "
                             "number") from None
        if not 400 <= code <= 599:
            raise ValueError(f"retries only refusals and server errors (HTTP 400-599); {code} is not one")
        if code not in out:
            out.append(code)
    return out


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks for: delta-seconds (a decimal fraction accepted) or an
    HTTP-date (a past date is 0). None: absent or unparsable (negative, NaN, garbage, too long)."""
    if value is None:
        return None
    v = value.strip()
    if not v or len(v) > RETRY_AFTER_CHARS:
        return None
    if _DELTA.fullmatch(v):
        return float(v)
    if not any(c.isalpha() for c in v):
        return None  # "-5", "1e9", "nan" has letters but no date: parsedate returns None below
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    wall = time.time() if now is None else now
    try:
        return max(0.0, when.timestamp() - wall)
    except (OverflowError, OSError, ValueError):
        return None


class RetryDecision(NamedTuple):
    retry: bool
    wait_asked_s: float | None  # what Retry-After asked for (None: absent or unparsable)
    wait_s: float  # the wait before the next attempt (0 when not retrying)
    reason: str | None  # why the retries stopped (only when `retry` is False)


class RetryPolicy(Input):
    """Which refused requests are sent again, and the budget each request has for it."""

    # HTTP statuses to retry (empty: never retry); not `on`, which YAML reads as `true`
    statuses: list[int] = Field(default_factory=list)
    max_retries: int = Field(default=3, ge=1, le=100)  # retries per request, after the first attempt
    max_wait_s: float = Field(default=60.0, gt=0, le=3600, allow_inf_nan=False)  # waiting per request, in all

    @field_validator("statuses", mode="before")
    @classmethod
    def _statuses(cls, v: object) -> object:
        if isinstance(v, str):
            return parse_statuses(v)
        if isinstance(v, int) and not isinstance(v, bool):
            v = [v]
        if isinstance(v, list):
            return parse_statuses(",".join(str(x) for x in v)) if v else []
        return v

    def decide(self, status: int | None, retry_after: str | None, *, retries_done: int,
               waited_s: float) -> RetryDecision | None:
        """After an attempt answered `status`: None when the policy does not cover it (a success, another
        status, a transport error); else whether to retry, and after how long."""
        if status is None or status not in self.statuses:
            return None
        asked = parse_retry_after(retry_after)
        if retries_done >= self.max_retries:
            return RetryDecision(False, asked, 0.0, f"still HTTP {status} after {retries_done} retries, the most "
                                 f"--max-retries allows")
        wait = asked if asked is not None else BACKOFF_S * 2.0 ** retries_done
        left = self.max_wait_s - waited_s
        if not math.isfinite(wait) or wait > left:
            what = f"Retry-After {retry_after.strip()[:RETRY_AFTER_CHARS]!r} asks" if asked is not None and \
                retry_after is not None else "the backoff asks"
            return RetryDecision(False, asked, 0.0, f"HTTP {status}: {what} {wait:g} s, more than the {max(0.0, left):g} "
                                 "s left of the wait budget (--max-retry-wait); not waited")
        return RetryDecision(True, asked, wait, None)

    async def after_attempt(self, status: int | None, retry_after: str | None, sent_ns: int, connect_ns: int | None,
                            done_ns: int | None, retries: list[RetryAttempt]) -> tuple[bool, str | None]:
        """After an attempt: (send it again?, why the retries stopped). When the policy covers the refusal and
        the request's budget allows, waits what it asks and records the attempt in `retries`."""
        if not self.statuses:
            return False, None
        decision = self.decide(status, retry_after, retries_done=len(retries), waited_s=sum(a.wait_s for a in retries))
        if decision is None or not decision.retry:
            return False, decision.reason if decision is not None else None
        t0 = _perf_ns()
        await asyncio.sleep(decision.wait_s)
        retries.append(RetryAttempt(
            attempt=len(retries) + 1, http_status=status or 0,
            retry_after=retry_after[:RETRY_AFTER_CHARS] if retry_after is not None else None,
            wait_asked_s=decision.wait_asked_s, wait_s=(_perf_ns() - t0) / 1e9, sent_ns=sent_ns,
            connect_ns=connect_ns, done_ns=done_ns if done_ns is not None else t0))
        return True, None

    def recorded(self) -> dict[str, object]:
        return self.model_dump()

    @property
    def enabled(self) -> bool:
        return bool(self.statuses)

