"""`rigbench ls`: the saved runs as one table, one row per run at any width, with each run's headline figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rigbench.outside import visible

__all__ = ["RunListing", "runs_table"]

# From this width every column is shown; below it the run, its verdict, model and headline figure.
WIDE_COLUMNS = 150


class RunListing(NamedTuple):
    run: str  # directory name
    created: str  # ISO time
    engine: str
    model: str
    suites: str
    status: str
    verdict: str  # trusted | UNTRUSTED | DAMAGED | –
    source_data: str
    headline: str = ""  # the run's answer in a few words (report/_answer.py `short_answer`)


def _when(created: str) -> str:
    return created[:16].replace("T", " ")  # minutes are enough to tell runs apart in a list


def _verdict(r: RunListing, *, with_status: bool) -> Text:
    """The verdict; narrow, a run that is not complete shows its status instead (its verdict is not final)."""
    v = r.status if with_status and r.status != "complete" and r.verdict != "DAMAGED" else r.verdict
    style = "green" if v == "trusted" else "bold red" if v in ("UNTRUSTED", "DAMAGED") else "yellow"
    return Text(visible(v), style=style)


def _table(title: str, cols: Sequence[str], rows: list[list[Text]], caption: str | None, *,
           fold: Sequence[str] = ()) -> Table:
    """`fold`: the columns that may wrap (the others never do, so no run id, date or verdict is cut)."""
    t = Table(title=Text(visible(title)), title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
              collapse_padding=True, pad_edge=False, caption=caption, caption_justify="left")
    for c in cols:
        t.add_column(c, no_wrap=c not in fold, overflow="fold")
    for r in rows:
        t.add_row(*r)
    return t


def runs_table(title: str, runs: Sequence[RunListing], width: int) -> Table:
    """One row per run. Wide terminals get every column; narrower ones the run, its verdict (or status), its
    model and its headline figure, dropping the model if even that does not fit, then letting the headline
    wrap (a run that measured speed and load has two figures); no name or figure is cut."""
    if width >= WIDE_COLUMNS:
        cols = ["run", "created", "engine", "model", "suites", "status", "verdict", "headline", "source data"]
        rows = [[Text(visible(v)) for v in (r.run, _when(r.created), r.engine, r.model, r.suites, r.status)]
                + [_verdict(r, with_status=False), Text(visible(r.headline)), Text(visible(r.source_data))]
                for r in runs]
        return _table(title, cols, rows, None, fold=("engine", "model", "suites", "headline"))
    caption = ("At 150 columns or more: created, engine, suites, status and source data too. "
               "One run in full: rigbench report RUN.")
    with_model = [[Text(visible(r.run)), _verdict(r, with_status=True), Text(visible(r.model)),
                   Text(visible(r.headline))] for r in runs]
    t = _table(title, ["run", "verdict", "model", "headline"], with_model, caption)
    console = Console(width=10_000, color_system=None)
    if console.measure(t).maximum <= width:
        return t
    return _table(title, ["run", "verdict", "headline"], [[r[0], r[1], r[3]] for r in with_model],
                  caption.replace("created, engine", "created, engine, model"), fold=("headline",))
