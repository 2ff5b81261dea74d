"""`--csv FILE` / `--jsonl FILE` on `rigbench run` and `rigbench report`: one row per request.

The cells carry what a server sent (`finish_reason`, an error message) and a user typed (labels): the
CSV writes every text cell through `outside.for_csv` (control characters escaped, a cell that a
spreadsheet would run as a formula prefixed with `'`, numbers left numbers); JSON lines escape control
characters by JSON's own rules, and a figure that is not finite is written `null` (JSON has no NaN).
Rows are written as they are made; a file that cannot be written is an `OutputError` (docs/metrics.md,
"Per-request export").
"""

from __future__ import annotations

import csv as csv_module
import io
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from rigbench.analysis import REQUEST_COLUMNS, request_rows
from rigbench.cli._paths import OutputError, write_output
from rigbench.outside import for_csv
from rigbench.store import RunReader

__all__ = ["csv_lines", "json_safe", "jsonl_lines", "write_request_exports"]


def json_safe(value: Any) -> Any:
    """`value` with every float that is not finite as None: valid JSON for any reader (json.dumps would write
    NaN or Infinity, which strict parsers refuse)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def csv_lines(rows: Iterable[dict[str, Any]], columns: Sequence[str] = REQUEST_COLUMNS) -> Iterator[str]:
    """The header, then one CSV line per row, each cell made safe to open (`outside.for_csv`)."""
    buf = io.StringIO()
    w = csv_module.DictWriter(buf, fieldnames=columns)

    def take() -> str:
        text = buf.getvalue()
        buf.seek(0)
        buf.truncate()
        return text

    w.writeheader()
    yield take()
    for row in rows:
        w.writerow({k: ("" if v is None else for_csv(v)) for k, v in row.items()})
        yield take()


def jsonl_lines(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(json_safe(row), allow_nan=False) + "\n"


def write_request_exports(readers: RunReader | Sequence[RunReader], *, csv: Path | None,
                          jsonl: Path | None) -> tuple[list[tuple[str, str]], list[OutputError]]:
    """Write the runs' per-request rows (analysis.request_rows) as CSV and/or JSON lines: (what, path) of
    each file written, and the error of each that could not be (the others are written all the same)."""
    written: list[tuple[str, str]] = []
    failed: list[OutputError] = []
    if csv is None and jsonl is None:
        return written, failed
    rows = [row for r in ([readers] if isinstance(readers, RunReader) else readers) for row in request_rows(r)]
    for path, option, lines, what in ((csv, "--csv", csv_lines, "per-request CSV"),
                                      (jsonl, "--jsonl", jsonl_lines, "per-request JSON lines")):
        if path is None:
            continue
        try:
            write_output(path, lines(rows), option)
        except OutputError as e:
            failed.append(e)
        else:
            written.append((f"{what} ({len(rows)} rows)", str(path)))
    return written, failed
