"""The per-request exports of `rigbench run` and `rigbench report`: `--csv FILE` / `--jsonl FILE` (one row per
request of every run) and `--vllm-json FILE` (the result JSON `vllm bench serve --save-result --save-detailed`
writes, for the first run).

Each is defined for every run kind that sent measured requests (speed, a rate, several rates, a sweep, a
trace replay, sessions) and refused, naming the run and its kind, for one that sent none (a quality or agent
run, a run stopped before its first request): never a file that is silently empty or all zeros. vLLM's file
holds one benchmark: a run of several windows (a sweep's burst and rates, a rate list) writes one file per
window, named `FILE-STEM.<window>.json`.
"""

from __future__ import annotations

import csv as csv_module
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from rich.console import Console

from rigbench.analysis import REQUEST_COLUMNS, request_rows
from rigbench.cli._paths import write_output
from rigbench.errors import UsageError
from rigbench.outside import for_console
from rigbench.records import LoadRequest, LoadWindow, SpeedRequest
from rigbench.report import vllm_detailed_result
from rigbench.store import RunReader

__all__ = [
    "ExportUnit",
    "check_export_suites",
    "check_exports",
    "export_units",
    "run_kind",
    "write_request_exports",
    "write_vllm_json",
]

# the suites whose requests the exports hold
_EXPORTED = ("speed", "load")


def run_kind(reader: RunReader) -> str:
    """What a run measured, as its errors name it: speed, rate, sweep, trace replay, sessions (or its suites)."""
    windows = reader.records("load_window", LoadWindow)
    parts = ["speed"] if reader.records("speed_request", SpeedRequest) else []
    if any(w.mode == "saturation" for w in windows):
        parts.append("sweep")
    elif any(w.mode == "trace" for w in windows):
        parts.append("trace replay")
    elif any(w.sessions is not None for w in windows):
        parts.append("sessions")
    elif windows:
        parts.append("rate" if len(windows) == 1 else f"rate list ({len(windows)} rates)")
    if parts:
        return " + ".join(parts)
    suites = list((reader.header.plan.get("suites") or {}).keys())
    return f"{'/'.join(suites)} run" if suites else "run without suites"


class ExportUnit(NamedTuple):
    """One benchmark of a run as vLLM's file holds one: the speed requests, or one load window's."""

    name: str  # "speed", or the window ("r0", "saturation", "trace")
    records: list[SpeedRequest | LoadRequest]
    settings: dict[str, Any]  # vLLM's benchmark settings and rigbench's `rigbench_*` keys


def export_units(reader: RunReader) -> list[ExportUnit]:
    """The run's benchmarks: its measured speed requests (warm-up left out), then each load window."""
    units: list[ExportUnit] = []
    kind = run_kind(reader)
    speed = [r for r in reader.records("speed_request", SpeedRequest) if not r.warmup]
    if speed:
        units.append(ExportUnit("speed", list(speed), {"request_rate": "inf", "burstiness": 1.0,
                                                       "max_concurrency": max(r.concurrency for r in speed),
                                                       "rigbench_kind": kind, "rigbench_window": None}))
    by_window: dict[str, list[SpeedRequest | LoadRequest]] = {}
    for q in reader.records("load_request", LoadRequest):
        by_window.setdefault(q.window, []).append(q)
    windows = sorted(reader.records("load_window", LoadWindow),
                     key=lambda w: (w.mode != "saturation", w.offered_rate_rps or 0.0))
    for w in windows:
        reqs = sorted(by_window.get(w.window, []), key=lambda q: q.index)
        if not reqs:
            continue
        rate: float | str = w.offered_rate_rps if w.offered_rate_rps is not None and w.mode == "rate" else "inf"
        settings: dict[str, Any] = {"request_rate": rate, "burstiness": w.burstiness or 1.0,
                                    "max_concurrency": w.max_concurrency, "rigbench_kind": kind,
                                    "rigbench_window": w.window, "rigbench_mode": w.mode}
        if w.mode == "trace":
            settings["rigbench_trace_mean_rate_rps"] = w.offered_rate_rps
        if w.sessions is not None:  # a session run's rate starts sessions; each row is one turn
            settings.update(request_rate="inf", rigbench_sessions=w.sessions, rigbench_turns=w.turns,
                            rigbench_sessions_per_s=w.offered_rate_rps)
        units.append(ExportUnit(w.window, reqs, settings))
    return units


def _none_sent(reader: RunReader) -> str:
    return (f"{reader.dir.name} is a {run_kind(reader)}: it holds no speed or load requests (a quality or agent run, "
            "or a run stopped before its first request)")


def check_exports(readers: Sequence[RunReader], *, csv: Path | None, jsonl: Path | None,
                  vllm_json: Path | None) -> None:
    """Before anything is written: refuse an export that would hold nothing, naming each run and its kind."""
    if vllm_json is not None and readers and not export_units(readers[0]):
        raise UsageError(f"--vllm-json: {_none_sent(readers[0])}; vLLM's result file describes a serving benchmark's "
                         "requests. Its results are in --json (and --markdown, --html).")
    if (csv is not None or jsonl is not None) and readers and not any(export_units(r) for r in readers):
        option = "--csv" if csv is not None else "--jsonl"
        raise UsageError(f"{option}: {'; '.join(_none_sent(r) for r in readers)}. The per-request export holds the "
                         "speed and load suites' requests; other results are in --json (and --markdown, --html).")


def check_export_suites(suites: Sequence[str], *, csv: Path | None, jsonl: Path | None) -> None:
    """`rigbench run --csv/--jsonl` with no suite that sends measured requests: refused before the run starts."""
    if (csv is None and jsonl is None) or any(s in _EXPORTED for s in suites):
        return
    option = "--csv" if csv is not None else "--jsonl"
    raise UsageError(f"{option}: this run's suites ({', '.join(suites) or 'none'}) send no speed or load requests, and "
                     "the per-request export holds only those; drop it (their results are in --json, --markdown, "
                     "--html), or add --suite speed or a --rate.")


def write_request_exports(readers: RunReader | Sequence[RunReader], *, csv: Path | None, jsonl: Path | None,
                          console: Console) -> None:
    """Write the runs' per-request rows (analysis.request_rows) as CSV and/or JSON lines; a run with none is
    named (every run without any is refused: `check_exports`)."""
    if csv is None and jsonl is None:
        return
    readers = [readers] if isinstance(readers, RunReader) else list(readers)
    check_exports(readers, csv=csv, jsonl=jsonl, vllm_json=None)
    rows = [row for r in readers for row in request_rows(r)]
    for r in readers:
        if not export_units(r):
            console.print(f"per-request export: {for_console(_none_sent(r))}; it has no rows")
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


def _unit_path(path: Path, unit: str) -> Path:
    return path.with_name(f"{path.stem}.{unit}{path.suffix or '.json'}")


def write_vllm_json(reader: RunReader, path: Path) -> list[tuple[str, str]]:
    """vLLM's result JSON of the run: one file for one benchmark, else one per benchmark (`STEM.<unit>.json`).
    Returns (what, path) of each file written."""
    units = export_units(reader)
    if not units:
        check_exports([reader], csv=None, jsonl=None, vllm_json=path)
    written = []
    for unit in units:
        target = path if len(units) == 1 else _unit_path(path, unit.name)
        write_output(target, json.dumps(vllm_detailed_result(unit.records, settings=unit.settings), indent=1))
        what = "vLLM-style detailed JSON" + ("" if len(units) == 1 else f" ({unit.name})")
        written.append((what, str(target)))
    return written
