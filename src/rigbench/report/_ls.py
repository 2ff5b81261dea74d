"""`rigbench ls`: the saved runs as one table, wide or stacked to fit the terminal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rich import box
from rich.table import Table
from rich.text import Text

from rigbench.outside import visible

__all__ = ["RunListing", "runs_table"]

# Below this width the table stacks each run's details under its id instead of in columns.
WIDE_COLUMNS = 150


class RunListing(NamedTuple):
    run: str  # directory name
    created: str  # ISO time
    engine: str
    model: str
    suites: str
    status: str
    verdict: str  # trusted | UNTRUSTED | –
    source_data: str


def _when(created: str) -> str:
    return created[:16].replace("T", " ")  # minutes are enough to tell runs apart in a list


def _verdict(v: str) -> Text:
    return Text(visible(v), style="green" if v == "trusted" else "bold red" if v in ("UNTRUSTED", "DAMAGED") else "")


def runs_table(title: str, runs: Sequence[RunListing], width: int) -> Table:
    """One row per run. Narrow terminals get two lines per run: id, status and source data, then
    date, engine, model, suites and the verdict; no name is cut."""
    t = Table(title=Text(visible(title)), title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
    if width >= WIDE_COLUMNS:
        for col in ("run", "created", "engine", "model", "suites", "status", "verdict", "source data"):
            t.add_column(col, no_wrap=col in ("run", "created", "source data", "verdict", "status"))
        for r in runs:
            t.add_row(*(Text(visible(v)) for v in (r.run, _when(r.created), r.engine, r.model, r.suites, r.status)),
                      _verdict(r.verdict), Text(visible(r.source_data)))
        return t
    t.caption = "Second line: created · engine · model · suites, and the trust verdict."
    t.caption_justify = "left"
    t.add_column("run", overflow="fold")
    t.add_column("status", no_wrap=True)
    t.add_column("source data", no_wrap=True)
    for r in runs:
        cell = Text(visible(r.run) + "\n")
        cell.append(visible(f"  {_when(r.created)} · {r.engine} · {r.model} · {r.suites}"), style="dim")
        status = Text(visible(r.status) + "\n")
        status.append_text(_verdict(r.verdict))
        t.add_row(cell, status, Text(visible(r.source_data)))
    return t
