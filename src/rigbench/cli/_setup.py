"""`rigbench setup`: fetch and build the embedded rig's parts ahead of time (cached)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from rigbench.cli._app import app
from rigbench.cli._console import make_console
from rigbench.cli._progress import RichProgress
from rigbench.errors import UsageError
from rigbench.rig import EMBEDDED_MODEL, ensure_llama_server, find_vllm, hf_copy_of_gguf, install_vllm

__all__ = ["setup"]


@app.command()
def setup(
    llama_server: Annotated[Path | None, typer.Option(help="Use this llama-server instead of PATH/cache/build.")] = None,
    engine: Annotated[str, typer.Option(help="llamacpp (default): llama-server + the GGUF. vllm: the managed vLLM "
                                        "CPU venv (unless vLLM is installed) + a Hugging Face copy of the model.")
                      ] = "llamacpp",
    vllm_python: Annotated[Path | None, typer.Option(help="--engine vllm: use this interpreter's vLLM.")] = None,
) -> None:
    """Fetch SmolLM2-135M (sha256-checked), find or build llama-server and smoke-test it on this CPU
    (or, with --engine vllm, prepare vLLM), so `rigbench run` starts at once."""
    console = make_console()
    if engine == "vllm":
        _setup_vllm(console, vllm_python)
        return
    if engine not in ("llamacpp", "llama.cpp"):
        raise UsageError(f"--engine {engine!r}: `rigbench setup` prepares llamacpp or vllm.")
    with RichProgress(console) as prog:
        model = EMBEDDED_MODEL.resolve()
        prog.note(f"model: {model} (sha256 verified)")
        found = ensure_llama_server(llama_server, lambda: model, progress=prog.build, note=prog.note)
        build = f", {found.build_variant} CPU build" if found.build_variant else ""
        prog.note(f"llama-server: {found.path} ({found.origin}{build}; smoke test {found.smoke_test})")
        if found.fallback != "none":
            prog.note(f"CPU fallback in use: {found.fallback} ({found.fallback_reason}); it can lower decode speed")
    console.print("[green]ready[/]: `rigbench run` will use these.")


def _setup_vllm(console: Console, vllm_python: Path | None) -> None:
    with RichProgress(console) as prog:
        install = find_vllm(vllm_python)
        if install is None:
            prog.note("installing the managed vLLM CPU venv (once: about 3 min, 3.4 GB; cached)")
            install = install_vllm(prog.build)
        prog.note(f"vLLM {install.version or '?'} ({install.origin}): {install.python}")
        gguf = EMBEDDED_MODEL.resolve()
        prog.note(f"model: {gguf} (sha256 verified)")
        hf_dir = hf_copy_of_gguf(gguf, install, prog.build)
        prog.note(f"Hugging Face copy for vLLM: {hf_dir}")
    console.print("[green]ready[/]: `rigbench run --engine vllm` will use these.")
