"""The typer application every command module registers on."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperGroup

from rigbench.rig.engines import EmbeddedRig

__all__ = ["app", "reflow"]


def reflow(doc: str | None) -> str | None:
    """A docstring as help text: paragraphs kept, each one line, so the help wraps at the terminal's
    width (typer keeps a docstring's own line breaks after its first paragraph, which cut sentences at
    80 columns)."""
    if not doc:
        return doc
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(doc).split("\n\n"))


def _without_metavar(get: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """click's own help option as rigbench's flags read: no `<bool>` type after it (click >= 8.2 shows a
    flag's type unless it has a metavar; rigbench's flags give metavar="")."""
    def get_help_option(ctx: Any) -> Any:  # click's Context -> Option | None (typer may vendor its own click)
        option = get(ctx)
        if option is not None:
            option.metavar = ""
        return option

    return get_help_option


class _Group(TyperGroup):
    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.help = reflow(self.help)
        for command in (self, *self.commands.values()):
            command.help = reflow(command.help)
            setattr(command, "get_help_option", _without_metavar(command.get_help_option))  # noqa: B010


app = typer.Typer(
    cls=_Group,
    name="rigbench",
    help=(
        "How fast, how good and how agent-ready is your LLM rig (model + engine + flags + machine)?\n\n"
        f"Start with `rigbench run`: it sets up the embedded {EmbeddedRig.label} rig and measures it."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from rigbench._version import __version__

        typer.echo(f"rigbench {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True, metavar="",
                                 help="Print rigbench's version and exit."),
) -> None:
    """How fast, how good and how agent-ready is your LLM rig (model + engine + flags + machine)?

    Start with `rigbench run`: it sets up the embedded llama.cpp + SmolLM2-135M rig and measures it."""
