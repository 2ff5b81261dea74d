"""Reading an engine command line into flags: the syntax is each engine's, the tokenizer is shared.

Each engine module states its `FlagSyntax` (how to tell its command lines apart, where options
start, which flags take no value, short spellings); `parse_flags` applies one to an argv.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import NamedTuple

__all__ = ["FlagReading", "FlagSyntax", "int_flag", "options_start", "parse_flags"]


class FlagSyntax(NamedTuple):
    markers: tuple[str, ...]  # text in a command line that says it is this engine's ("llama-server")
    programs: tuple[str, ...]  # an argv word ending in one of these is the program; options follow it
    subcommands: tuple[str, ...] = ()  # a word after which options start (`vllm serve`)
    bare: frozenset[str] = frozenset()  # flags that take no value
    aliases: Mapping[str, str] = MappingProxyType({})  # short or alternative spelling -> canonical long flag
    model_positional: bool = False  # the first positional argument is the model (`vllm serve MODEL`)


class FlagReading(NamedTuple):
    """A number a command line sets, and how it was read (evidence for a finding)."""

    value: int | None
    how: str


def options_start(argv: Sequence[str], syntax: FlagSyntax) -> int:
    """Index just after the program (and subcommand / -m module) part of argv."""
    for i, tok in enumerate(argv):
        if tok in syntax.subcommands or tok.endswith(syntax.programs):
            return i + 1
    return 1 if argv else 0


def parse_flags(argv: Sequence[str], syntax: FlagSyntax) -> tuple[dict[str, str | bool], list[str]]:
    """Canonical long flag -> value (True if bare), and the positional arguments, in order."""
    options: dict[str, str | bool] = {}
    positional: list[str] = []
    i = options_start(argv, syntax)
    while i < len(argv):
        tok = argv[i]
        if tok.startswith("-") and len(tok) > 1 and not _is_number(tok):
            name, eq, val = tok.partition("=")
            name = syntax.aliases.get(name, name)
            if eq:
                options[name] = val
            elif name in syntax.bare or tok in syntax.bare or i + 1 >= len(argv) or (
                    argv[i + 1].startswith("-") and not _is_number(argv[i + 1])):
                options[name] = True
            else:
                options[name] = argv[i + 1]
                i += 1
        else:
            positional.append(tok)
        i += 1
    return options, positional


def int_flag(options: Mapping[str, str | bool], *names: str) -> int | None:
    """The first of `names` that is set, as an int (None if absent or not a number)."""
    for n in names:
        v = options.get(n)
        if isinstance(v, str):
            try:
                return int(v)
            except ValueError:
                return None
    return None


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False
