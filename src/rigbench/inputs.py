"""Outside input at its door: the rules every door checks a value by, in one place.

A door is where a value from outside rigbench comes in: `rigbench run`'s options, a plan file and
`--set`, a trace file, a data directory (MMLU-Pro, BFCL), a task pack, an agent task, an emulator
script. Adversary: a user or a file that gives anything — a `true` where a count goes, a length of
10^12 tokens, a 10 MB field, a UTF-8 byte-order mark, bytes that are not UTF-8, a FIFO, `/dev/zero`,
JSON nested 100,000 deep. Each is refused at its door with one line naming the file (and line) or
the option, the value seen and what to do, before anything is sized by it or sent.

| rule                 | what                                                                          |
| ---                  | ---                                                                           |
| strict types         | pydantic models of outside input derive from `records.Input`: their int,      |
|                      | float and bool are strict (`true` is no count, `1` is no yes, `5.0` no count) |
| whole numbers        | `whole_number`: an int (not a bool), or text of digits only (a CSV cell)      |
| token lengths        | at most `MAX_TOKENS`, before the served context is known; against the served  |
|                      | context once it is (`sizing.fits_in_context`, before anything is sent)        |
| files                | `read_text` / `text_lines`: a regular file (not a directory, FIFO or device), |
|                      | at most a size (each door's bound), UTF-8 with or without a byte-order mark,   |
|                      | lines of at most a size                                                       |
| JSON, YAML           | `json_lines` / `load_json` / `load_yaml`: a value nested past 1,000 levels, a  |
|                      | number of over 4,300 digits, YAML whose aliases expand past a million values   |
|                      | (a "billion laughs") or refer to themselves: one line, never a traceback       |
| values in messages   | `shown`: cut to a length and with control characters visible                  |

Plain functions of values and paths: every layer from `records` up may import them.
"""

from __future__ import annotations

import json
import re
import stat
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from rigbench.errors import UsageError
from rigbench.outside import visible

__all__ = ["MAX_TOKENS", "explain", "json_lines", "load_json", "load_yaml", "number", "read_text", "shown", "text_lines",
           "too_big_to_read", "whole_number"]

# The longest request length any door takes before the served context is known: 2^24 tokens, above
# the longest context an open model advertises (10M tokens, Llama 4 Scout, 2025). A typo such as 10^12
# is refused here, before a prompt is sized by it.
MAX_TOKENS = 1 << 24

_DIGITS = re.compile(r"\s*[+]?\d+\s*")
_SHOWN_CHARS = 80


def shown(value: Any, limit: int = _SHOWN_CHARS) -> str:
    """`value` as a message quotes it: its repr, control characters visible, cut to `limit` characters."""
    text = visible(repr(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def whole_number(value: Any, where: str, *, what: str = "a token count", low: int = 1,
                 high: int | None = MAX_TOKENS) -> int:
    """`value` as a whole number in [low, high]: an int (not a bool) or the text of one (digits only, a
    CSV cell). Else a UsageError `where: <value>: <what> is ...`."""
    if type(value) is int and low <= value and (high is None or value <= high):
        return value  # the common case, first (a trace calls this twice a line)
    if type(value) is str and value.isascii() and value.isdigit() and len(value) <= 40:
        n = int(value)
        if low <= n and (high is None or n <= high):
            return n
    if isinstance(value, float) and value.is_integer():
        raise UsageError(f"{where} {shown(value)}: {what} is a whole number written without a decimal point.")
    if isinstance(value, bool) or not isinstance(value, int | str):
        kind = {bool: "a boolean", float: "a fraction", type(None): "null"}.get(type(value), type(value).__name__)
        raise UsageError(f"{where} {shown(value)}: {what} is a whole number, not {kind}.")
    if isinstance(value, str):
        if len(value) > 40 or not _DIGITS.fullmatch(value):
            raise UsageError(f"{where} {shown(value)}: {what} is a whole number written in digits (e.g. 128).")
        value = int(value)
    if value < low or (high is not None and value > high):
        rng = f"{low:,}..{high:,}" if high is not None else f"{low:,} or more"
        why = " (no served context is longer)" if high == MAX_TOKENS else ""
        raise UsageError(f"{where} {shown(value)}: {what} must be {rng}{why}.")
    return value


def number(value: Any, what: str = "a number") -> float:
    """`value` as a float for a pydantic validator that runs before the field's own (mode="before"): an int or
    a float, never a bool or text (the strict rule of `records.Input`). Else a ValueError saying what it takes."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"takes {what}; got {shown(value)}")
    try:
        return float(value)
    except OverflowError:  # an int past the float range
        raise ValueError(f"takes {what}; got {shown(value)}, beyond any float") from None


_KIND = {bool: "a boolean", str: "text", float: "a fraction", type(None): "null", list: "a list", dict: "a mapping"}


def explain(error: Mapping[str, Any]) -> str:
    """A pydantic error (one item of `ValidationError.errors()`) in the words every door uses: what the
    value is and what the setting takes, for the strict types of `records.Input`; else pydantic's own."""
    kind, given = error.get("type"), error.get("input")
    seen = _KIND.get(type(given), type(given).__name__)
    if kind in ("int_type", "int_parsing", "int_from_float"):
        if isinstance(given, float) and given.is_integer():
            return "takes a whole number written without a decimal point"
        return f"takes a whole number, not {seen}"
    if kind in ("float_type", "float_parsing"):
        return f"takes a number, not {seen}"
    if kind in ("bool_type", "bool_parsing"):
        return f"takes true or false, not {seen}"
    limit = (error.get("ctx") or {}).get("le")
    if kind == "less_than_equal" and limit == MAX_TOKENS:
        return f"must be at most {MAX_TOKENS:,} tokens (no served context is longer)"
    return str(error.get("msg", "")).removeprefix("Value error, ")


def _regular_file(path: Path, what: str) -> int:
    """The size of `path`, a regular file; else a UsageError saying what it is."""
    try:
        st = path.stat()
    except OSError as e:
        raise UsageError(f"{what} {path}: cannot read it ({e.strerror or e}).") from None
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise UsageError(f"{what} {path}: that is {kind}, not a file; give the path of a file.")
    return st.st_size


def _decode(raw: bytes, path: Path, what: str, line: int | None = None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        at = f":{line}" if line is not None else ""
        raise UsageError(f"{what} {path}{at}: not UTF-8 text (byte {e.start}: {raw[e.start:e.start + 1]!r}); save "
                         "it as UTF-8.") from None


def read_text(path: Path, what: str, *, max_bytes: int) -> str:
    """The whole text of a file of at most `max_bytes`: UTF-8, a byte-order mark dropped. Else one line
    naming `what` (the option or kind of file), the path and the problem. Never reads past the bound (a
    /proc file says it is empty and is not: the read itself is bounded)."""
    size = _regular_file(path, what)
    if size > max_bytes:
        raise UsageError(f"{what} {path}: {size:,} bytes, more than the {max_bytes:,} such a file may hold; "
                         "is it the right file?")
    try:
        with path.open("rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise UsageError(f"{what} {path}: cannot read it ({e.strerror or e}).") from None
    if len(raw) > max_bytes:
        raise UsageError(f"{what} {path}: more than the {max_bytes:,} bytes such a file may hold; is it the right "
                         "file?")
    return _decode(raw, path, what).removeprefix("\ufeff")


def text_lines(path: Path, what: str, *, max_line_bytes: int) -> Iterator[tuple[int, str]]:
    """(line number, line without its newline) of a UTF-8 text file of any length, one line in memory at a
    time; a byte-order mark on the first line is dropped; a line longer than `max_line_bytes` is refused
    naming its number."""
    _regular_file(path, what)
    try:
        f = path.open("rb")
    except OSError as e:
        raise UsageError(f"{what} {path}: cannot read it ({e.strerror or e}).") from None
    with f:
        n = 0
        while True:
            try:
                raw = f.readline(max_line_bytes + 1)
            except OSError as e:
                raise UsageError(f"{what} {path}:{n + 1}: cannot read it ({e.strerror or e}).") from None
            if not raw:
                return
            n += 1
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                raise UsageError(f"{what} {path}:{n}: a line longer than {max_line_bytes:,} bytes; is it the right "
                                 "file?")
            text = _decode(raw, path, what, n).rstrip("\r\n")
            yield n, text.removeprefix("\ufeff") if n == 1 else text


def too_big_to_read(e: ValueError | RecursionError) -> str:
    """Why a parser that took the syntax gave up on a value (JSON, YAML), in the doors' words: nesting past
    Python's stack (RecursionError) or an integer past Python's digit limit (ValueError)."""
    if isinstance(e, RecursionError):
        return f"values nested deeper than rigbench reads (Python's limit, {sys.getrecursionlimit():,} levels)"
    if "digits" in str(e):
        return f"a number of more than {sys.get_int_max_str_digits():,} digits"
    return shown(str(e), 120)


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{where}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}).") from None
    except (ValueError, RecursionError) as e:
        raise UsageError(f"{where}: JSON rigbench cannot read: {too_big_to_read(e)}; is it the right file?") from None


def json_lines(path: Path, what: str, *, max_line_bytes: int) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSON-lines file, read a line at a time."""
    for n, line in text_lines(path, what, max_line_bytes=max_line_bytes):
        if line.strip():
            yield n, _json(line, f"{path}:{n}")


def load_json(path: Path, what: str, *, max_bytes: int) -> Any:
    """The JSON value of a file of at most `max_bytes`."""
    return _json(read_text(path, what, max_bytes=max_bytes), str(path))


# A YAML file's values once its aliases are expanded: far above any plan or pack, far below what would
# exhaust memory when a model validates the expansion ("billion laughs": each alias doubles the last).
_YAML_VALUES_MAX = 1_000_000


def _expanded(node: yaml.Node, seen: dict[int, int | None]) -> int:
    """How many values `node` stands for with every alias expanded; a node inside itself is refused."""
    key = id(node)
    if key in seen:
        got = seen[key]
        if got is None:
            raise _SelfReference
        return got
    seen[key] = None
    n = 1
    if isinstance(node, yaml.SequenceNode):
        n += sum(_expanded(v, seen) for v in node.value)
    elif isinstance(node, yaml.MappingNode):
        n += sum(_expanded(k, seen) + _expanded(v, seen) for k, v in node.value)
    seen[key] = n
    if n > _YAML_VALUES_MAX:
        raise _TooMany
    return n


class _SelfReference(Exception):
    pass


class _TooMany(Exception):
    pass


def load_yaml(text: str, where: str) -> tuple[yaml.Node | None, Any]:
    """The YAML document's node tree (it keeps each key's line) and its value. Refused in one line: not YAML,
    nested too deep, aliases that expand past a million values or refer to themselves, a number Python will
    not read."""
    try:
        loader = yaml.SafeLoader(text)
        try:
            root = loader.get_single_node()
            if root is not None:
                _expanded(root, {})
            data = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{where}{line} is not valid YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:  # e.g. a control character the YAML reader refuses, before any parsing
        raise UsageError(f"{where} is not valid YAML: {e}".replace("\n", " ")) from None
    except _TooMany:
        raise UsageError(f"{where}: its aliases (*name) expand to more than {_YAML_VALUES_MAX:,} values; write the "
                         "values out, or fewer of them.") from None
    except _SelfReference:
        raise UsageError(f"{where}: an alias (*name) refers to the value that holds it; YAML that contains "
                         "itself describes no settings.") from None
    except (ValueError, RecursionError) as e:
        raise UsageError(f"{where}: YAML rigbench cannot read: {too_big_to_read(e)}; is it the right file?") from None
    return root, data
