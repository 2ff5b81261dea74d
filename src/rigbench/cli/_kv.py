"""`rigbench kv`: KV-cache capacity planner."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigbench.analysis import (
    BlockAccounting,
    KVArchitecture,
    kv_architecture_from_path,
    kv_capacity,
    sessions_from_pool,
)
from rigbench.cli._app import app
from rigbench.cli._checks import check_finite, read_model_file
from rigbench.cli._console import make_console
from rigbench.errors import UsageError
from rigbench.outside import for_console
from rigbench.report import kv_terminal
from rigbench.rig.engines import Engine, builtin_engines, known_engines

__all__ = ["kv"]


def _block_engines(engines: tuple[Engine, ...] | None = None) -> list[Engine]:
    """The engines whose KV block accounting rigbench models (`Engine.kv_accounting`): of `engines`, or of
    every known engine (installed packages' too)."""
    return [e for e in (known_engines() if engines is None else engines) if e.kv_accounting({}) is not None]


# for the help texts: the built-in engines (the help does not import installed engine packages)
_BLOCKS = "/".join(e.name for e in _block_engines(builtin_engines()))
_BLOCKS_BY = "/".join(f"{e.display_name}'s" for e in _block_engines(builtin_engines()))


@app.command()
def kv(
    budget_gib: Annotated[float | None, typer.Option("--budget-gib", help="Memory given to the KV cache, GiB "
                                                    "(not needed with --server-pool alone).")] = None,
    context: Annotated[int, typer.Option(help="Tokens per session (prompt + output). Required.",
                                         show_default=False)] = 0,
    model_file: Annotated[Path | None, typer.Option("--model-file", help="A .gguf, a config.json or a model "
                                                    "directory.")] = None,
    model: Annotated[Path | None, typer.Option("--model", hidden=True, help="Deprecated: --model-file (in "
                                               "`run`, --model is the served model name).")] = None,
    layers: Annotated[int | None, typer.Option(help="Attention layers.")] = None,
    kv_heads: Annotated[int | None, typer.Option(help="KV heads (GQA).")] = None,
    head_dim: Annotated[int | None, typer.Option(help="Head dimension.")] = None,
    window: Annotated[int | None, typer.Option(help="Sliding-window size, tokens.")] = None,
    local_per_global: Annotated[int, typer.Option(help="Sliding-window layers per global layer (3 -> L L L G).")] = 0,
    kv_dtype: Annotated[str, typer.Option(help="bf16, f16, fp8, q8_0, q4_0...")] = "bf16",
    server_pool: Annotated[int | None, typer.Option(help="The pool (tokens) the server reported, shown beside; "
                                                    "alone, it gives sessions = pool / context.")] = None,
    engine: Annotated[str | None, typer.Option(help=f"{_BLOCKS}: model {_BLOCKS_BY} block accounting (block "
                                               "size, sliding-window blocks) instead of plain per-token bytes.")] = None,
    block_size: Annotated[int | None, typer.Option(help=f"--engine {_BLOCKS}: KV block size, tokens (default: "
                                                   "the engine's).")] = None,
    max_num_batched_tokens: Annotated[int | None, typer.Option(help=f"--engine {_BLOCKS}: scheduler token budget "
                                                               "(default: the engine's).")] = None,
    batches_in_flight: Annotated[int | None, typer.Option(help=f"--engine {_BLOCKS}: batches scheduled ahead, 2 with "
                                                          "async scheduling, else 1 (default: the engine's).")] = None,
) -> None:
    """Tokens of KV cache and concurrent sessions at a context length, from the model's attention shape."""
    check_finite(budget_gib, "--budget-gib", high=1e9)  # a billion GiB: far above any machine
    if model is not None:
        if model_file is not None:
            raise UsageError("give the model once: --model-file (--model is its deprecated old name).")
        typer.echo("rigbench kv: --model is deprecated here, use --model-file (in `run`, --model is the served "
                   "model name).", err=True)
        model_file, model = model, None
    model = model_file
    if context < 1:
        raise UsageError(f"--context must be a positive number of tokens per session; got {context}.")
    for value, option in ((layers, "--layers"), (kv_heads, "--kv-heads"), (head_dim, "--head-dim"),
                          (server_pool, "--server-pool"), (block_size, "--block-size"),
                          (max_num_batched_tokens, "--max-num-batched-tokens"),
                          (batches_in_flight, "--batches-in-flight")):
        if value is not None and value < 1:
            raise UsageError(f"{option} must be a positive integer; got {value}.")
    if window is not None and window < 0:
        raise UsageError(f"--window must be 0 or more tokens (0: no sliding window); got {window}.")
    if local_per_global < 0:
        raise UsageError(f"--local-per-global must be 0 or more; got {local_per_global}.")
    settings = {k: v for k, v in (("block_size", block_size), ("max_num_batched_tokens", max_num_batched_tokens),
                                  ("batches_in_flight", batches_in_flight)) if v is not None}
    blocks = _accounting(engine, settings)
    have_arch = model is not None or bool(layers and kv_heads and head_dim)
    if server_pool is not None and not have_arch and budget_gib is None:
        cap = sessions_from_pool(server_pool, context)
        kv_terminal(cap, make_console())
        return
    if model is not None:
        arch = _read_model(model)
        if head_dim:  # a config's head_dim wins over hidden/heads; an explicit flag wins over both
            arch = arch.model_copy(update={"head_dim": head_dim, "source": f"{arch.source}, --head-dim"})
    elif layers and kv_heads and head_dim:
        arch = KVArchitecture.with_pattern(layers=layers, kv_heads=kv_heads, head_dim=head_dim, window=window,
                                           local_per_global=local_per_global)
    else:
        raise UsageError("give --model-file, or all of --layers, --kv-heads and --head-dim (or --server-pool alone).")
    if budget_gib is None:
        raise UsageError("--budget-gib is needed to estimate from the architecture (e.g. --budget-gib 1).")
    cap = kv_capacity(arch, budget_bytes=int(budget_gib * 1024**3), context_tokens=context, kv_dtype=kv_dtype,
                      server_pool_tokens=server_pool, server_pool_source="given" if server_pool else None,
                      blocks=blocks)
    make_console().print(f"{arch.layers} layers ({arch.global_layers} global), {arch.kv_heads} KV heads x {arch.head_dim} "
                    f"(from {for_console(arch.source)})")
    kv_terminal(cap, make_console())


def _accounting(engine: str | None, settings: dict[str, int]) -> BlockAccounting | None:
    """The block accounting of `--engine` (None without it); an engine without one is refused."""
    if engine is None:
        return None
    for e in _block_engines():
        if e.name == engine:
            return e.kv_accounting(settings)
    names = "/".join(e.name for e in _block_engines())
    raise UsageError(f"--engine {engine!r}: only {names}'s block accounting is modelled; omit it for per-token bytes.")


def _read_model(model: Path) -> KVArchitecture:
    return read_model_file(kv_architecture_from_path, model, "an attention shape",
                           "Pass a complete .gguf file, a config.json or a model directory, "
                           "or give --layers, --kv-heads and --head-dim.")
