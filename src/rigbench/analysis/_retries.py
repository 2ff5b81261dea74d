"""Requests the server turned away and rigbench sent again (`--retry-on`; docs/metrics.md, "Retries").

Counted per record kind from the raw records: how many requests were retried, how often, how long was
waited, and how many were still refused when their budget ran out. The waits are not in any latency
figure (the timings are the answered attempt's); this says how much of the run they took.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import Field

from rigbench.records import Frozen
from rigbench.store import RunReader

__all__ = ["RetryRow", "RetrySummary", "summarize_retries"]


class RetryRow(Frozen):
    kind: str  # the record kind holding the requests (speed_request, load_request, sanity, ...)
    requests: int
    retried: int  # requests sent more than once
    retries: int  # retries in all
    wait_s: float  # time waited before retries, measured, in all
    wait_max_s: float  # the longest single wait
    gave_up: int  # still refused when their budget ran out (a rejected record)
    statuses: dict[int, int] = Field(default_factory=dict)  # refusals that were retried, by HTTP status


class RetrySummary(Frozen):
    policy: dict[str, Any] | None  # the run's retry setting as recorded (None: --retry-on not given)
    rows: list[RetryRow]
    stopped: list[str] = Field(default_factory=list)  # why budgets ran out (distinct reasons, first few)

    @property
    def retried(self) -> int:
        return sum(r.retried for r in self.rows)

    @property
    def retries(self) -> int:
        return sum(r.retries for r in self.rows)

    @property
    def wait_s(self) -> float:
        return sum(r.wait_s for r in self.rows)

    @property
    def gave_up(self) -> int:
        return sum(r.gave_up for r in self.rows)


def _results(value: Any) -> list[dict[str, Any]]:
    """The requests inside one record: stream results (a speed request's `result`, an agent exchange's...)
    and the gate's answers, which carry their retries since format 9."""
    if isinstance(value, dict):
        if ("sent_ns" in value and "chunk_ns" in value) or "retries" in value:
            return [value]
        return [r for v in value.values() for r in _results(v)]
    if isinstance(value, list):
        return [r for v in value for r in _results(v)]
    return []


def summarize_retries(reader: RunReader) -> RetrySummary | None:
    """None when the run neither asked for retries nor holds any (every run before `--retry-on`)."""
    plan = reader.header.plan or {}
    policy = plan.get("retries") if isinstance(plan.get("retries"), dict) else None
    rows: dict[str, dict[str, Any]] = {}
    stopped: list[str] = []
    for rec in reader.raw_records():
        kind = str(rec.get("kind"))
        for res in _results(rec):
            row = rows.setdefault(kind, {"requests": 0, "retried": 0, "retries": 0, "wait_s": 0.0, "wait_max_s": 0.0,
                                         "gave_up": 0, "statuses": defaultdict(int)})
            row["requests"] += 1
            tries = [a for a in res.get("retries") or [] if isinstance(a, dict)]
            if tries:
                row["retried"] += 1
                row["retries"] += len(tries)
                waits = [float(a.get("wait_s") or 0.0) for a in tries]
                row["wait_s"] += sum(waits)
                row["wait_max_s"] = max(row["wait_max_s"], *waits)
                for a in tries:
                    row["statuses"][int(a.get("http_status") or 0)] += 1
            why = res.get("retry_stopped")
            if isinstance(why, str):
                row["gave_up"] += 1
                if why not in stopped and len(stopped) < 3:
                    stopped.append(why)
    if policy is None and not any(r["retries"] or r["gave_up"] for r in rows.values()):
        return None
    out = [RetryRow(kind=k, **{**v, "statuses": dict(sorted(v["statuses"].items()))}) for k, v in rows.items()
           if v["retries"] or v["gave_up"] or k in ("speed_request", "load_request")]
    return RetrySummary(policy=policy, rows=out, stopped=stopped)
