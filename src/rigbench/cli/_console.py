"""The consoles rigbench prints on: console emoji codes off, so that a `:x:` a server or a user wrote
(a model name, a scenario, a label) is shown as written, never as an emoji (rigbench.outside)."""

from __future__ import annotations

from rich.console import Console

__all__ = ["make_console"]


def make_console(*, stderr: bool = False) -> Console:
    return Console(stderr=stderr, emoji=False)
