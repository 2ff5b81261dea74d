"""The typer application every command module registers on."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(
    name="rigbench",
    help=(
        "How fast, how good and how agent-ready is your LLM rig (model + engine + flags + machine)?\n\n"
        "Start with `rigbench run`: it sets up the embedded llama.cpp + SmolLM2-135M rig and measures it."
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
    version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True,
                                 help="Print rigbench's version and exit."),
) -> None:
    """How fast, how good and how agent-ready is your LLM rig (model + engine + flags + machine)?

    Start with `rigbench run`: it sets up the embedded llama.cpp + SmolLM2-135M rig and measures it."""
