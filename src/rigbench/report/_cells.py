"""One report table as data (title, header, rows of cells, notes, each with a severity), built once
per section and drawn three ways: rich for the terminal, Markdown, and HTML. A section's builder
decides what the figures are; these renderers decide only how each medium shows them.

How a severity shows (a cell or note without one is plain everywhere):

| severity | terminal      | Markdown     | HTML            |
| ---      | ---           | ---          | ---             |
| ok       | green         | plain        | plain           |
| muted    | dim           | plain        | plain           |
| notable  | bold          | plain        | bold            |
| warn     | yellow        | plain        | plain           |
| error    | red           | bold lead    | bold            |
| critical | bold magenta  | bold lead    | bold            |

A Markdown note of a bold severity has only its lead in bold (up to its first colon, else its
first word): a whole bold list item reads as a shouted paragraph in a post.

A section's `lead` continues a title too long for a heading: a short title, then the lead as the first
line under it (a line on the terminal, a paragraph in Markdown, a `lead` paragraph in HTML).

A section's `title_severity` colours its title on the terminal only (Markdown and HTML titles are
already bold). A note of `level` 1 is a sub-item of the note before it: indented on the terminal and
in HTML, a nested list item in Markdown. A section with no rows is its title and notes alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from rigbench.outside import for_html, for_markdown, visible
from rigbench.report._layout import fitted_table

__all__ = ["Cell", "Note", "Section", "Severity", "html_table", "html_text", "markdown_table", "rich_cell", "section_html", "section_markdown",
           "section_terminal", "simple_table", "simple_tables", "text"]

Severity = Literal["ok", "muted", "notable", "warn", "error", "critical"]

_RICH_STYLE: dict[Severity, str] = {"ok": "green", "muted": "dim", "notable": "bold", "warn": "yellow",
                                    "error": "red", "critical": "bold magenta"}
_MD_BOLD = {"error", "critical"}
_HTML_BOLD = {"notable", "error", "critical"}


@dataclass(frozen=True)
class Cell:
    """A cell the reader must not miss (a failed check, a changed verdict)."""

    text: str
    severity: Severity


@dataclass(frozen=True)
class Note:
    """A sentence under the table: how to read it, or a warning about its figures."""

    text: str
    severity: Severity | None = None
    level: int = 0  # 1: a sub-item of the note before it


@dataclass(frozen=True)
class Section:
    """One table of a report. `left_cols`: the leading text columns; the rest are right-aligned
    figures. `short_head` and `short_title`: the terminal's (narrower; line breaks allowed in
    headers), explained in `key`. `title_severity`: the title's colour on the terminal."""

    title: str
    head: Sequence[str]
    rows: Sequence[Sequence[str | Cell]]
    notes: Sequence[Note] = ()
    left_cols: int = 1
    short_head: Sequence[str] | None = None
    short_title: str | None = None
    key: str | None = None
    title_severity: Severity | None = None
    lead: str | None = None  # the first line under the title (what a long title would have said)

    def __post_init__(self) -> None:
        # a ragged row would silently shift every later cell under the wrong header in all three outputs
        for row in self.rows:
            if len(row) != len(self.head):
                raise ValueError(f"report section {self.title!r}: a row has {len(row)} cells for "
                                 f"{len(self.head)} columns ({list(self.head)}): {[text(c) for c in row]}")
        if self.short_head is not None and len(self.short_head) != len(self.head):
            raise ValueError(f"report section {self.title!r}: {len(self.short_head)} short headers for "
                             f"{len(self.head)} columns")

    @property
    def texts(self) -> list[list[str]]:
        """The rows as plain text, as a reader of any output sees them."""
        return [[text(c) for c in row] for row in self.rows]


def text(c: str | Cell) -> str:
    return c.text if isinstance(c, Cell) else c


def rich_cell(c: str | Cell) -> Text:
    """A cell as text, never markup: a cell may hold what a server or a user wrote (rigbench.outside)."""
    return Text(visible(c.text), style=_RICH_STYLE[c.severity]) if isinstance(c, Cell) else Text(visible(c))


def _md_cell(c: str | Cell) -> str:
    t = for_markdown(text(c))
    return f"**{t}**" if isinstance(c, Cell) and c.severity in _MD_BOLD else t


# -- terminal ------------------------------------------------------------------------------------


def section_terminal(console: Console, sec: Section,
                     *, layout: Literal["fitted", "cards", "simple", "pairs"] = "fitted", title: bool = True,
                     notes_indent: str = "  ") -> None:
    """`fitted`: a table that turns into cards on a narrow console (report/_layout.py); `cards`: the
    cards at any width (the first cell as a heading, then `column: value` lines). `simple`: the
    short headers with the key as the caption, the first column never wrapped. `pairs`: a boxed
    two-column table of name and value, no header. `title=False`: the caller prints the title."""
    name = (sec.short_title or sec.title) if title else None
    if name and sec.lead:  # the title, then its lead on the line under it, then the table untitled
        console.print(Text(visible(name)), style=_RICH_STYLE[sec.title_severity] if sec.title_severity else "italic",
                      highlight=False)
        console.print(visible(sec.lead), highlight=False, markup=False)
        name = None
    # the title as text, not markup: a run label such as "[synthetic L=3.4]" must survive
    shown = Text(visible(name)) if name else None
    if not sec.rows:
        if shown:
            console.print(shown, style=_RICH_STYLE[sec.title_severity] if sec.title_severity else "italic",
                          highlight=False)
    elif layout in ("fitted", "cards"):
        console.print(fitted_table(console, visible(name) if name else None, sec.short_head or sec.head,
                                   [[rich_cell(c) for c in r] for r in sec.rows], left_cols=sec.left_cols,
                                   title_style=_RICH_STYLE[sec.title_severity] if sec.title_severity else None,
                                   cards=layout == "cards"))
    elif layout == "simple":
        for table in simple_tables(console, sec, title=name is not None):
            console.print(table)
    else:
        t = Table(title=shown, show_header=False, title_justify="left",
                  title_style=_RICH_STYLE[sec.title_severity] if sec.title_severity else None)
        t.add_column(style="bold")
        t.add_column(overflow="fold")
        for r in sec.rows:
            t.add_row(*(rich_cell(c) for c in r))
        console.print(t)
    for n in sec.notes:
        console.print(f"{notes_indent}{'  ' * n.level}{visible(n.text, multiline=True)}", style=_RICH_STYLE[n.severity] if n.severity else None,
                      highlight=False, markup=False)


def simple_table(sec: Section, *, title: bool = True, columns: Sequence[int] | None = None,
                 caption: bool = True) -> Table:
    """The short headers with the key as the caption, the first column never wrapped, no figure cut.
    `columns`: only these columns (indexes), for a table split to fit the terminal."""
    name = (sec.short_title or sec.title) if title else None
    cols = list(range(len(sec.head))) if columns is None else list(columns)
    heads = sec.short_head or sec.head
    t = Table(title=Text(visible(name)) if name else None, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
              collapse_padding=True, pad_edge=False, caption=sec.key if caption else None, caption_justify="left",
              title_style=_RICH_STYLE[sec.title_severity] if sec.title_severity else None)
    for i in cols:
        # a figure is never cut: its column keeps the width of its longest cell (up to 12, then it folds)
        figure = min(12, max([len(text(r[i])) for r in sec.rows] + [1])) if i >= sec.left_cols else None
        t.add_column(heads[i], justify="left" if i < sec.left_cols else "right", no_wrap=i == 0, min_width=figure,
                     overflow="fold")
    for r in sec.rows:
        t.add_row(*(rich_cell(r[i]) for i in cols))
    return t


def simple_tables(console: Console, sec: Section, *, title: bool = True) -> list[Table]:
    """`simple_table`, or, when its figures would not fit the console, the same table split by columns into
    tables that fit, each repeating the leading text columns (the title on the first, the key under the
    last): a figure is never cut, and a row never folds into a tall cell."""
    def wide(t: Table) -> bool:
        return console.measure(t, options=console.options.update(max_width=10_000)).maximum > console.width

    whole = simple_table(sec, title=title)
    if not wide(whole):
        return [whole]
    lead = list(range(sec.left_cols))
    groups: list[list[int]] = [[]]
    for i in range(sec.left_cols, len(sec.head)):
        trial = simple_table(sec, title=False, columns=[*lead, *groups[-1], i], caption=False)
        if groups[-1] and wide(trial):
            groups.append([])
        groups[-1].append(i)
    return [simple_table(sec, title=title and k == 0, columns=[*lead, *g], caption=k == len(groups) - 1)
            for k, g in enumerate(groups)]


# -- Markdown ------------------------------------------------------------------------------------


def section_markdown(sec: Section, *, heading: str | None = "###", align: bool = True) -> str:
    """The title as a heading of that level (None: a bold line), the table, then the notes as a list.
    `align=False`: every column left-aligned."""
    title = for_markdown(sec.title)
    lines = [f"{heading} {title}" if heading else f"**{title}**"]
    if sec.lead:
        lines += ["", for_markdown(sec.lead)]
    if sec.rows:
        lines += ["", *markdown_table(sec, align=align)]
    if sec.notes:
        lines += [""] + [f"{'  ' * n.level}- {_md_note(n)}" for n in sec.notes]
    return "\n".join(lines)


def _md_note(n: Note) -> str:
    """A note of a bold severity is marked by its lead in bold (up to its first colon, else its first
    word), never bold whole: a bold list item reads as a shouted paragraph in a post."""
    t = for_markdown(n.text)
    if n.severity not in _MD_BOLD:
        return t
    lead, sep, rest = t.partition(": ")
    if not (sep and rest and lead):
        lead, sep, rest = t.partition(" ")
    return f"**{lead}**{sep}{rest}" if sep and rest else f"**{t}**"


def markdown_table(sec: Section, *, align: bool = True) -> list[str]:
    n = len(sec.head)
    left = sec.left_cols if align else n
    return ["| " + " | ".join(sec.head) + " |",
            "|" + "|".join(["---"] * left + ["---:"] * (n - left)) + "|",
            *("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in sec.rows)]


# -- HTML ----------------------------------------------------------------------------------------


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def html_text(s: object) -> str:
    """Text for an HTML element: escaped (rigbench.outside), and a `code span` (the Markdown that rigbench's own
    messages use for a command or a flag) drawn as <code>, so no Markdown syntax shows on the page."""
    return _CODE_SPAN.sub(r"<code>\1</code>", for_html(s))


def _e(s: object) -> str:
    return html_text(s)


def html_table(head: Sequence[str], rows: Sequence[Sequence[str | Cell]], *, numeric_from: int = 2, cls: str = "",
               flag: str | None = None) -> str:
    """A table; cells (and headers) containing `flag` are drawn in red, cells of a bold severity in bold."""
    def th(h: str) -> str:
        return f'<th class="synth">{_e(h)}</th>' if flag and flag in h else f"<th>{_e(h)}</th>"

    def td(i: int, c: str | Cell) -> str:
        t = text(c)
        classes = (["num"] if i >= numeric_from else []) + (["synth"] if flag and flag in t else [])
        body = f"<b>{_e(t)}</b>" if isinstance(c, Cell) and c.severity in _HTML_BOLD else _e(t)
        return f'<td class="{" ".join(classes)}">{body}</td>' if classes else f"<td>{body}</td>"

    out = [f'<table class="{cls}"><thead><tr>' + "".join(th(h) for h in head) + "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(td(i, c) for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def section_html(sec: Section, *, numeric_from: int | None = None, level: int = 3) -> str:
    """A title (h3, or h`level`), the table (none when the section has no rows), then the notes."""
    out = f"<h{level}>{_e(sec.title)}</h{level}>"
    if sec.lead:
        out += f'<p class="lead">{_e(sec.lead)}</p>'
    if sec.rows:
        out += html_table(sec.head, sec.rows, numeric_from=sec.left_cols if numeric_from is None else numeric_from)
    return out + "".join(_html_note(n) for n in sec.notes)


def _html_note(n: Note) -> str:
    body = f"<b>{_e(n.text)}</b>" if n.severity in _HTML_BOLD else _e(n.text)
    return f'<p class="note{" sub" if n.level else ""}">{body}</p>'

