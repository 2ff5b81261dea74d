"""`rigbench setup`: fetch and build the embedded rig's parts ahead of time (cached)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from rigbench.cli._app import app
from rigbench.cli._progress import RichProgress
from rigbench.rig import EMBEDDED_MODEL
from rigbench.rig._smoke import ensure_llama_server

__all__ = ["setup"]


@app.command()
def setup(
    llama_server: Annotated[Path | None, typer.Option(help="Use this llama-server instead of PATH/cache/build.")] = None,
) -> None:
    """Fetch SmolLM2-135M (sha256-checked), find or build llama-server and smoke-test it on this CPU,
    so `rigbench run` starts at once."""
    console = Console()
    with RichProgress(console) as prog:
        model = EMBEDDED_MODEL.resolve()
        prog.note(f"model: {model} (sha256 verified)")
        engine = ensure_llama_server(llama_server, lambda: model, progress=prog.build, note=prog.note)
        build = f", {engine.build_variant} CPU build" if engine.build_variant else ""
        prog.note(f"llama-server: {engine.path} ({engine.origin}{build}; smoke test {engine.smoke_test})")
        if engine.fallback != "none":
            prog.note(f"CPU fallback in use: {engine.fallback} ({engine.fallback_reason}); it can lower decode speed")
    console.print("[green]ready[/]: `rigbench run` will use these.")
