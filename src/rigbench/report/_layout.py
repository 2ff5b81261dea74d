"""Tables that stay readable at any terminal width: a table when it fits, else one card per row
(the row's name, then `column: value` lines), so that no cell is cut or folded into a tall column.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

__all__ = ["fitted_table"]


# Text columns (after the first) may wrap at word boundaries, but not narrower than this.
_MIN_TEXT_WIDTH = 16


def _wrapped(head: str, rows: Sequence[Sequence[str | Text]], i: int) -> int:
    """A text column's width when wrapped at words: 16, or its longest word (never cut), or less when
    every cell is shorter."""
    longest = max([cell_len(w) for r in rows for w in str(r[i]).split()] + [0])
    return min(_natural(head, rows, i, True), max(_MIN_TEXT_WIDTH, longest))


def _table(head: Sequence[str], rows: Sequence[Sequence[str | Text]], left_cols: int, compact: bool) -> Table:
    """`compact`: headers stacked word by word, text columns wrapped at words, one space between columns."""
    t = Table(box=box.SIMPLE_HEAD, padding=(0, 0) if compact else (0, 1), collapse_padding=True, pad_edge=False)
    for i, h in enumerate(head):
        text_col = 0 < i < left_cols
        t.add_column(h.replace(" ", "\n") if compact else h, justify="left" if i < left_cols else "right",
                     no_wrap=not (compact and text_col),
                     min_width=_wrapped(h, rows, i) if text_col else None)
    for r in rows:
        t.add_row(*r)
    return t


def _natural(head: str, rows: Sequence[Sequence[str | Text]], i: int, stacked: bool) -> int:
    h = max(cell_len(w) for w in head.split()) if stacked and head.strip() else cell_len(head)
    return max([h] + [cell_len(str(r[i])) for r in rows])


def fitted_table(console: Console, title: str | None, head: Sequence[str], rows: Sequence[Sequence[str | Text]],
                 *, left_cols: int = 1, title_style: str | None = None, cards: bool = False) -> RenderableType:
    """The table if it fits the console; else a compact table (stacked headers, text columns wrapped
    at words but never narrower than 16 characters); else the same data as cards. Title above.
    `cards`: cards at any width (rows of long prose read better so)."""
    n = len(head)
    wide = sum(_natural(h, rows, i, False) for i, h in enumerate(head)) + 2 * (n - 1) + 2
    compact = sum(_wrapped(h, rows, i) if 0 < i < left_cols else _natural(h, rows, i, True)
                  for i, h in enumerate(head)) + (n - 1) + 2
    if not cards and (wide <= console.width or compact <= console.width):
        t = _table(head, rows, left_cols, compact=wide > console.width)
    else:
        t = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
        t.add_column(no_wrap=True, style="dim")
        t.add_column(overflow="fold")
        for r in rows:
            t.add_row(Text(str(r[0]), style="bold"), "")
            for h, v in zip(head[1:], r[1:], strict=True):
                if str(v) not in ("", "–"):
                    t.add_row(f"  {h}", v)
    return Group(Text(title, style=title_style or "italic"), t) if title else t
