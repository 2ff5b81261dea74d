"""Trace replay: read (arrival time, input tokens, output tokens) per request from a JSONL or CSV file.

Layouts, told apart by their columns:

| layout   | arrival                                           | input tokens    | output tokens     |
|----------|---------------------------------------------------|-----------------|-------------------|
| azure    | `TIMESTAMP` (a date-time, or seconds)             | `ContextTokens` | `GeneratedTokens` |
| mooncake | `timestamp` (milliseconds)                        | `input_length`  | `output_length`   |
| rigbench | `arrival_s` (seconds)                             | `input_tokens`  | `output_tokens`   |

Azure: the public Azure LLM inference traces (AzurePublicDataset, CSV). Mooncake: the Mooncake traces
(JSONL; their `hash_ids`, which describe shared prefixes, are not reproduced: every replayed prompt has
its own opening). Arrivals are replayed relative to the first line. A file with a missing column, a time
that is negative, not a number or earlier than the line before, or a length that is not a positive
integer is refused with the file, line and value.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path
from typing import Any, NamedTuple

from rigbench.errors import UsageError

__all__ = ["TRACE_LAYOUTS", "TraceRequest", "read_trace"]

# layout -> (arrival column, its unit in seconds or "datetime", input column, output column)
TRACE_LAYOUTS: dict[str, tuple[str, float | str, str, str]] = {
    "azure": ("TIMESTAMP", "datetime", "ContextTokens", "GeneratedTokens"),
    "mooncake": ("timestamp", 1e-3, "input_length", "output_length"),
    "rigbench": ("arrival_s", 1.0, "input_tokens", "output_tokens"),
}


class TraceRequest(NamedTuple):
    line: int  # 1-based line of the file
    offset_s: float  # arrival relative to the first request
    input_tokens: int
    output_tokens: int


def _rows(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """(line, row) pairs and the columns, from JSONL (one object a line) or CSV (a header line)."""
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"--trace {path}: cannot read it ({e.strerror or e}).") from None
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if first.lstrip().startswith("{"):
        rows: list[tuple[int, dict[str, Any]]] = []
        for i, ln in enumerate(text.splitlines(), start=1):
            if not ln.strip():
                continue
            try:
                obj = json.loads(ln)
            except json.JSONDecodeError as e:
                raise UsageError(f"{path}:{i}: not a JSON object ({e.msg}): {ln[:80]!r}.") from None
            if not isinstance(obj, dict):
                raise UsageError(f"{path}:{i}: not a JSON object: {ln[:80]!r}.")
            rows.append((i, obj))
        columns = sorted({k for _, r in rows for k in r}) if rows else []
        return rows, list(rows[0][1]) if rows else columns
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in (reader.fieldnames or [])]
    return [(i + 2, {(k or "").strip(): v for k, v in r.items()}) for i, r in enumerate(reader)], header


def _layout(path: Path, columns: list[str]) -> str:
    for name, (t, _, i, o) in TRACE_LAYOUTS.items():
        if t in columns:
            missing = [c for c in (i, o) if c not in columns]
            if missing:
                raise UsageError(f"{path}:1: the {name} layout needs the column(s) {', '.join(missing)}; "
                                 f"the file has {', '.join(columns) or 'none'}.")
            return name
    known = "; ".join(f"{n}: {t}, {i}, {o}" for n, (t, _, i, o) in TRACE_LAYOUTS.items())
    raise UsageError(f"{path}:1: no arrival-time column: the file has {', '.join(columns) or 'no columns'}. "
                     f"A trace has one of these layouts ({known}).")


def _seconds(path: Path, line: int, column: str, value: Any, unit: float | str) -> float:
    if unit == "datetime":
        if isinstance(value, str) and not _is_number(value):
            s = value.strip()
            if "." in s:  # the Azure traces give 7 fractional digits; Python reads at most 6
                head, frac = s.split(".", 1)
                s = f"{head}.{frac[:6]}"
            try:
                when = dt.datetime.fromisoformat(s)
            except ValueError:
                raise UsageError(f"{path}:{line}: {column} {value!r} is not a date-time or a number of seconds.") from None
            if when.tzinfo is None:
                when = when.replace(tzinfo=dt.UTC)
            return when.timestamp()
        unit = 1.0
    assert isinstance(unit, float)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{path}:{line}: {column} {value!r} is not a number.") from None
    if x != x or x < 0:
        raise UsageError(f"{path}:{line}: {column} {value!r}: arrival times must be zero or positive.")
    return x * unit


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _tokens(path: Path, line: int, column: str, value: Any) -> int:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{path}:{line}: {column} {value!r} is not a token count.") from None
    if x != int(x) or x < 1:
        raise UsageError(f"{path}:{line}: {column} {value!r}: a token count is a positive whole number.")
    return int(x)


def read_trace(path: Path | str, limit: int | None = None) -> tuple[str, list[TraceRequest]]:
    """The trace's layout and its requests (the first `limit`), arrivals relative to the first line."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--trace {p}: no such file.")
    rows, columns = _rows(p)
    if not rows:
        raise UsageError(f"{p}: the trace holds no requests.")
    layout = _layout(p, columns)
    t_col, unit, i_col, o_col = TRACE_LAYOUTS[layout]
    out: list[TraceRequest] = []
    zero = prev = None
    for line, row in rows[:limit] if limit else rows:
        for c in (t_col, i_col, o_col):
            if row.get(c) in (None, ""):
                raise UsageError(f"{p}:{line}: no value in column {c}.")
        t = _seconds(p, line, t_col, row[t_col], unit)
        if prev is not None and t < prev:
            raise UsageError(f"{p}:{line}: {t_col} {row[t_col]!r} is earlier than the line before: a trace must be "
                             "sorted by arrival time.")
        zero = t if zero is None else zero
        prev = t
        out.append(TraceRequest(line, t - zero, _tokens(p, line, i_col, row[i_col]), _tokens(p, line, o_col, row[o_col])))
    return layout, out
