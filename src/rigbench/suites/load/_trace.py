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
that is negative, not a finite number or earlier than the line before, or a length that is not a whole
number in 1..`MAX_TOKENS` (a JSON `true` is none; lengths over the served context are refused by the
suite before anything is sent) is refused with the file, line and value; so is a line over 1 MiB, a
CSV field over the csv module's limit, JSON nested too deep, a file that is not UTF-8 (a byte-order
mark is read past) and a trace of more than `MAX_SCHEDULED` requests. The file is read a line at a
time (rigbench.inputs), and only the first `limit` requests when a limit is given.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from rigbench.errors import UsageError
from rigbench.inputs import MAX_TOKENS, shown, text_lines, too_big_to_read, whole_number
from rigbench.suites.load._schedule import MAX_SCHEDULED

__all__ = ["TRACE_LAYOUTS", "TraceRequest", "read_trace"]

# layout -> (arrival column, its unit in seconds or "datetime", input column, output column)
TRACE_LAYOUTS: dict[str, tuple[str, float | str, str, str]] = {
    "azure": ("TIMESTAMP", "datetime", "ContextTokens", "GeneratedTokens"),
    "mooncake": ("timestamp", 1e-3, "input_length", "output_length"),
    "rigbench": ("arrival_s", 1.0, "input_tokens", "output_tokens"),
}
# A line of a trace holds one request: a Mooncake line with its hash ids is well under a kilobyte.
_MAX_LINE_BYTES = 1 << 20
_MAX_TEXT_CHARS = 64  # a time or a count written as text


class TraceRequest(NamedTuple):
    line: int  # 1-based line of the file
    offset_s: float  # arrival relative to the first request
    input_tokens: int
    output_tokens: int


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    return text_lines(path, "--trace", max_line_bytes=_MAX_LINE_BYTES)


def _json_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for i, ln in _lines(path):
        if not ln.strip():
            continue
        try:
            obj = json.loads(ln)
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}:{i}: not a JSON object ({e.msg}): {shown(ln)}.") from None
        except (ValueError, RecursionError) as e:
            raise UsageError(f"{path}:{i}: not a JSON object rigbench can read: {too_big_to_read(e)}.") from None
        if not isinstance(obj, dict):
            raise UsageError(f"{path}:{i}: not a JSON object: {shown(ln)}.")
        yield i, obj


def _csv_rows(path: Path, lines: Iterator[tuple[int, str]]) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    numbers: list[int] = []

    def texts() -> Iterator[str]:
        for i, ln in lines:
            numbers.append(i)
            yield ln

    reader = csv.reader(texts())
    try:
        header = [h.strip() for h in next(reader, [])]
    except csv.Error as e:
        raise UsageError(f"{path}:1: not a CSV header line ({e}).") from None

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as e:  # a field past the csv module's limit, a NUL byte
                raise UsageError(f"{path}:{numbers[-1] if numbers else '?'}: not a CSV line rigbench can read ({e}); "
                                 "is it the right file?") from None
            if not any(c.strip() for c in cells):
                continue
            yield numbers[-1], dict(zip(header, cells, strict=False))

    return header, rows()


def _rows(path: Path) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    """The columns and the (line, row) pairs, read as they are asked for: JSONL (one object a line; its first
    object's keys are the columns) or CSV (a header line)."""
    lines = _lines(path)
    first = None
    for i, ln in lines:
        if ln.strip():
            first = (i, ln)
            break
    if first is None:
        return [], iter(())
    if first[1].lstrip().startswith("{"):
        rows = _json_rows(path)
        head = next(rows, None)
        if head is None:
            return [], iter(())

        def chained() -> Iterator[tuple[int, dict[str, Any]]]:
            yield head
            yield from rows

        return [str(k) for k in head[1]], chained()

    def again() -> Iterator[tuple[int, str]]:
        yield first
        yield from lines

    return _csv_rows(path, again())


def _listed(columns: list[str]) -> str:
    names = [shown(c)[1:-1] for c in columns[:20]]
    return ", ".join(names) + (f" (and {len(columns) - 20:,} more)" if len(columns) > 20 else "")


def _layout(path: Path, columns: list[str]) -> str:
    for name, (t, _, i, o) in TRACE_LAYOUTS.items():
        if t in columns:
            missing = [c for c in (i, o) if c not in columns]
            if missing:
                raise UsageError(f"{path}:1: the {name} layout needs the column(s) {', '.join(missing)}; "
                                 f"the file has {_listed(columns) or 'none'}.")
            return name
    known = "; ".join(f"{n}: {t}, {i}, {o}" for n, (t, _, i, o) in TRACE_LAYOUTS.items())
    raise UsageError(f"{path}:1: no arrival-time column: the file has {_listed(columns) or 'no columns'}. "
                     f"A trace has one of these layouts ({known}).")


def _seconds(path: Path, line: int, column: str, value: Any, unit: float | str) -> float:
    if type(unit) is float and type(value) in (int, float, str) and len(str(value)) <= _MAX_TEXT_CHARS:
        try:  # the common case first: a number of seconds or milliseconds
            x = float(value)
        except ValueError:
            x = math.nan
        if math.isfinite(x) and x >= 0:
            return x * unit
    if isinstance(value, str) and len(value) > _MAX_TEXT_CHARS:
        raise UsageError(f"{path}:{line}: {column} {shown(value)}: {len(value):,} characters, not a time.")
    if unit == "datetime":
        if isinstance(value, str) and not _is_number(value):
            s = value.strip()
            if "." in s:  # the Azure traces give 7 fractional digits; Python reads at most 6
                head, frac = s.split(".", 1)
                s = f"{head}.{frac[:6]}"
            try:
                when = dt.datetime.fromisoformat(s)
            except ValueError:
                raise UsageError(f"{path}:{line}: {column} {shown(value)} is not a date-time or a number of "
                                 "seconds.") from None
            if when.tzinfo is None:
                when = when.replace(tzinfo=dt.UTC)
            return when.timestamp()
        unit = 1.0
    assert isinstance(unit, float)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise UsageError(f"{path}:{line}: {column} {shown(value)} is not a number.")
    try:
        x = float(value)
    except (ValueError, OverflowError):
        raise UsageError(f"{path}:{line}: {column} {shown(value)} is not a number.") from None
    if not math.isfinite(x) or x < 0:
        raise UsageError(f"{path}:{line}: {column} {shown(value)}: arrival times must be finite, zero or positive.")
    return x * unit


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def read_trace(path: Path | str, limit: int | None = None) -> tuple[str, list[TraceRequest]]:
    """The trace's layout and its requests (the first `limit`), arrivals relative to the first line. A file
    read before and unchanged since (size and modification time) is not read again: settings validation,
    the schedule's length, the check against the rig and the replay all ask for it."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return _read(str(p), limit)
    layout, reqs = _read_unchanged(str(p), st.st_size, st.st_mtime_ns, limit)
    return layout, list(reqs)


@functools.lru_cache(maxsize=2)
def _read_unchanged(path: str, size: int, mtime_ns: int, limit: int | None) -> tuple[str, tuple[TraceRequest, ...]]:
    layout, reqs = _read(path, limit)
    return layout, tuple(reqs)


def _read(path: str, limit: int | None) -> tuple[str, list[TraceRequest]]:
    p = Path(path)
    columns, rows = _rows(p)
    if not columns:
        raise UsageError(f"{p}: the trace holds no requests.")
    layout = _layout(p, columns)
    t_col, unit, i_col, o_col = TRACE_LAYOUTS[layout]
    out: list[TraceRequest] = []
    zero = prev = None
    for line, row in rows:
        if limit is not None and len(out) >= limit:
            break
        if len(out) >= MAX_SCHEDULED:
            raise UsageError(f"{p}: more than {MAX_SCHEDULED:,} requests, more than one replay holds; replay the "
                             f"first N with --requests N (plan: `load: {{requests: N}}`).")
        for c in (t_col, i_col, o_col):
            if row.get(c) in (None, ""):
                raise UsageError(f"{p}:{line}: no value in column {c}.")
        t = _seconds(p, line, t_col, row[t_col], unit)
        if prev is not None and t < prev:
            raise UsageError(f"{p}:{line}: {t_col} {shown(row[t_col])} is earlier than the line before: a trace must "
                             "be sorted by arrival time.")
        zero = t if zero is None else zero
        prev = t
        inp = whole_number(row[i_col], f"{p}:{line}: {i_col}", high=MAX_TOKENS)
        outp = whole_number(row[o_col], f"{p}:{line}: {o_col}", high=MAX_TOKENS)
        out.append(TraceRequest(line, t - zero, inp, outp))
    if not out:
        raise UsageError(f"{p}: the trace holds no requests.")
    return layout, out
