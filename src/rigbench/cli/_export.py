"""`--csv FILE` / `--jsonl FILE` on `rigbench run` and `rigbench report`: one row per request."""

from __future__ import annotations

import csv as csv_module
import json
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from rigbench.analysis import REQUEST_COLUMNS, request_rows
from rigbench.outside import for_console
from rigbench.store import RunReader

__all__ = ["write_request_exports"]


def write_request_exports(readers: RunReader | Sequence[RunReader], *, csv: Path | None, jsonl: Path | None,
                          console: Console) -> None:
    """Write the runs' per-request rows (analysis.request_rows) as CSV and/or JSON lines."""
    if csv is None and jsonl is None:
        return
    rows = [row for r in ([readers] if isinstance(readers, RunReader) else readers) for row in request_rows(r)]
    if csv is not None:
        with csv.open("w", newline="") as f:
            w = csv_module.DictWriter(f, fieldnames=REQUEST_COLUMNS)
            w.writeheader()
            w.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in rows)
        console.print(f"per-request CSV ({len(rows)} rows): {for_console(csv)}")
    if jsonl is not None:
        with jsonl.open("w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        console.print(f"per-request JSON lines ({len(rows)} rows): {for_console(jsonl)}")
