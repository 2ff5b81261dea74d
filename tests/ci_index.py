"""The index of kept test-session records (`ci-runs/index.tsv`): one line per run, appended by
tests/ci_record.py when pytest finishes, or by .ci/run when it ended before pytest wrote a record:

    python3 tests/ci_index.py RECORD_DIR EXIT_STATUS

Standard library only: .ci/run calls it with whatever python3 there is, the venv perhaps not made.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["INDEX_COLUMNS", "append_row"]

INDEX_COLUMNS = ["started_utc", "commit", "exit", "passed", "failed", "errors", "skipped", "xfailed", "pytest_s",
                 "total_s", "load1_mean", "load1_max", "steal_cores_mean", "steal_cores_max", "cpus", "cpu_model",
                 "record_dir", "note"]


def append_row(record_dir: Path, row: dict[str, Any]) -> Path:
    """Append `row` (INDEX_COLUMNS keys; missing ones empty) to the index beside `record_dir`."""
    index = record_dir.parent / "index.tsv"
    index.parent.mkdir(parents=True, exist_ok=True)
    new = not index.exists()
    with index.open("a") as f:
        if new:
            f.write("\t".join(INDEX_COLUMNS) + "\n")
        f.write("\t".join("" if row.get(k) is None else str(row[k]).replace("\t", " ") for k in INDEX_COLUMNS) + "\n")
    return index


def _main(argv: list[str]) -> int:
    record_dir, status = Path(argv[1]), argv[2]
    if (record_dir / "summary.json").exists():
        return 0  # pytest wrote the record and its line
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    index = append_row(record_dir, {"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                    "commit": commit[:12], "exit": status, "record_dir": str(record_dir),
                                    "note": f".ci/run ended (exit {status}) before pytest wrote a record"})
    print(f"ci: no test record (exit {status} before pytest finished); index: {index}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
