"""`rigbench setup`: fetch, build or install what launching an engine needs, ahead of time (cached).

The engine does it (`Engine.setup`), so this names none; its options are `rigbench run`'s own
(`rig.RigFlags`: --engine, --llama-server, --vllm-python), declared once.
"""

from __future__ import annotations

import typer
from pydantic import BaseModel, create_model

from rigbench.cli._app import app
from rigbench.cli._console import make_console
from rigbench.cli._progress import RichProgress
from rigbench.cli._typed import options_command
from rigbench.errors import UsageError
from rigbench.rig import RigFlags
from rigbench.rig.engines import get_engine

__all__ = ["setup"]

# `rigbench setup`'s options: those rig flags of `rigbench run`, with their types, defaults and help
SetupArgs = create_model("SetupArgs", **{  # type: ignore[call-overload]
    n: (RigFlags.model_fields[n].rebuild_annotation(), RigFlags.model_fields[n].default) for n in RigFlags.SETUP_FLAGS})


@app.command()
@options_command(SetupArgs)
def setup(ctx: typer.Context | None, o: BaseModel) -> None:
    """Prepare an engine so `rigbench run` starts at once: by default the embedded rig (fetch SmolLM2-135M,
    sha256-checked; find or build llama-server and smoke-test it on this CPU); with --engine vllm, vLLM (the
    managed CPU venv unless vLLM is installed) and a Hugging Face copy of the model."""
    flags = RigFlags.of(o.model_dump())
    engine = get_engine(flags.engine)  # unknown: the error lists the engines there are
    console = make_console()
    with RichProgress(console) as prog:
        ready = engine.setup(flags, prog.note, prog.build)
    if ready is None:
        raise UsageError(f"--engine {flags.engine!r}: `rigbench setup` has nothing to prepare for {engine.name}: "
                         "rigbench does not start it from `rigbench run` flags (attach with --endpoint, or launch "
                         "it from a plan rig: docs/plans.md).")
    console.print(f"[green]ready[/]: {ready}")
