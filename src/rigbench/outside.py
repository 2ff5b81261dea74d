"""Text from outside rigbench is text: shown, never interpreted.

Outside text is anything rigbench did not write itself: a model's replies, a server's error bodies
and model names, file names, scenario names and labels a user typed. Adversary: a server (or a run
directory someone sent) whose text carries terminal escape sequences (move the cursor up and erase
the UNTRUSTED line above, set colours), console markup (`[bold green]TRUSTED[/]`), console emoji
codes (`:x:`), or Markdown and HTML that a report reader's viewer would render or run.

One function per medium, all built on `visible`:

| medium   | function      | what it does                                                                |
| ---      | ---           | ---                                                                         |
| any      | `visible`     | control characters (C0, DEL, C1, bidi overrides) written as `\\x1b`, `\\u202e` |
| terminal | `for_console` | `visible`, then rich markup escaped (print it inside a markup string; the     |
|          |               | console must be made with `emoji=False`, as every rigbench console is)        |
| Markdown | `for_markdown`| `visible`, then the characters that would make a link, image, emphasis,       |
|          |               | table cell break, heading or raw HTML backslash-escaped or made entities      |
| HTML     | `for_html`    | `visible`, then `html.escape`                                                 |
| JSON     | `for_json`    | JSON text with C1 controls and bidi overrides written as `\\uXXXX` escapes      |
|          |               | (JSON encoders escape C0 already; other non-ASCII stays readable)             |
| CSV      | `for_csv`     | `visible`, then a text cell a spreadsheet would run as a formula (it begins   |
|          |               | with `=`, `+`, `-`, `@` or a tab) gets a leading `'`; numbers stay numbers    |

Pure functions of a string: every layer may import this module.
"""

from __future__ import annotations

import html
import re

from rich.markup import escape as _rich_escape

__all__ = ["for_console", "for_csv", "for_html", "for_json", "for_markdown", "visible"]


def _control_table(newlines: bool) -> dict[int, str]:
    codes = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0),
             0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
    keep = {0x09} | ({0x0A} if newlines else set())  # a tab moves nothing; a newline only where wanted
    return {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in codes if c not in keep}


_ONE_LINE = _control_table(newlines=False)
_MULTI_LINE = _control_table(newlines=True)


def visible(value: object, *, multiline: bool = False) -> str:
    """`value` as text whose every character is shown: control characters (escape sequences, carriage
    returns, backspaces, bells, bidi overrides) become their escapes (`\\x1b`). A newline is one too,
    unless `multiline` (a reply shown as a block): a one-line field cannot fake a line of its own."""
    return str(value).translate(_MULTI_LINE if multiline else _ONE_LINE)


def for_console(value: object, *, multiline: bool = False) -> str:
    """`value` ready to go inside a rich markup string: visible, and its brackets not markup."""
    return _rich_escape(visible(value, multiline=multiline))


# Characters that start Markdown syntax anywhere in a line; `_` only where it can open or close
# emphasis (not inside a word: `chat_short` stays as written).
_MD_ANYWHERE = re.compile(r"([\\`*\[\]|~])|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_MD_HTML = re.compile(r"<(?=[A-Za-z/!?])|&(?=#?[0-9A-Za-z]+;)")  # what opens a tag, a comment or an entity
_MD_HEADING = re.compile(r"^(\s*)#")  # a list item or cell that starts with `#` would be a heading


def for_markdown(value: object) -> str:
    """`value` as literal Markdown text on one line (a table cell, a list item, a heading): a newline
    is a space, a tag or an entity is shown as written."""
    t = visible(str(value).replace("\r\n", " ").replace("\n", " "))
    t = _MD_ANYWHERE.sub(lambda m: "\\" + m.group(0), t)
    t = _MD_HTML.sub(lambda m: "&amp;" if m.group(0) == "&" else "&lt;", t)
    return _MD_HEADING.sub(lambda m: m.group(1) + "\\#", t)


def for_html(value: object, *, multiline: bool = False) -> str:
    """`value` as HTML text (element content or a quoted attribute value)."""
    return html.escape(visible(value, multiline=multiline))


# What a spreadsheet (Excel, LibreOffice Calc, Google Sheets) reads as the start of a formula when a
# cell begins with it (OWASP "CSV Injection"; ASVS 1.2.10 adds NUL). CR and NUL never lead a cell
# here: `visible` has written them as `\\x0d` and `\\x00` already.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\x00")
# A text cell that is a plain decimal number: a spreadsheet reads it as that number, and no formula
# (`-1.5`, `+3`, `2e-05`); `-1+1` or `-2-cmd|...` is not one.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def for_csv(value: object) -> object:
    """A CSV cell a spreadsheet shows as written and never evaluates: numbers (and None, written empty)
    pass as they are; text is `visible` (one line), and text that would start a formula gets the single
    quote spreadsheets take as "this is text" (OWASP's CSV-injection advice), unless it is a plain
    number (a negative number is a number, not a formula)."""
    if value is None or isinstance(value, bool | int | float):
        return value
    t = visible(value)
    if t.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(t):
        return "'" + t
    return t


# What a JSON encoder leaves raw (it escapes C0 and DEL only as ensure_ascii would, and pydantic's writes
# UTF-8): C1 controls and the bidi overrides that reorder what a reader sees in a terminal or an editor.
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in (*range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, 0x2028, 0x2029,
                                             *range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def for_json(text: str) -> str:
    """A JSON document's text with every C1 control and bidi override as a `\\uXXXX` escape: the same
    JSON value, which shows as written wherever it is read. (These code points occur only inside
    strings of valid JSON, where the escape means the same character.)"""
    return text.translate(_JSON_ESCAPES)
