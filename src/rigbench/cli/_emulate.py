"""`rigbench emulate`: serve the reference emulator (an OpenAI-compatible server with scripted
timing and faults) so other clients, rigbench included, can be compared against its truth."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from rigbench.cli._app import app
from rigbench.errors import UsageError
from rigbench.testing import ROGUES, EmulatorScript, serve

__all__ = ["emulate"]

FAULT_HELP = (
    'A fault as JSON, repeatable, e.g. \'{"kind": "disconnect", "every": 10, "at_token": 5}\'. '
    "Kinds: http_status, stall, disconnect, malformed, error_event."
)


@app.command()
def emulate(
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port to listen on.")] = 8000,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    model: Annotated[str, typer.Option(help="Model name served on /v1/models.")] = "emulated-model",
    ttft_ms: Annotated[float, typer.Option(help="Mean time to first token, ms.")] = 50.0,
    ttft_jitter_ms: Annotated[float, typer.Option(help="TTFT spread, ms (half-width or std dev).")] = 0.0,
    itl_ms: Annotated[float, typer.Option(help="Mean delay per generated token, ms.")] = 10.0,
    itl_jitter_ms: Annotated[float, typer.Option(help="Per-token delay spread, ms.")] = 0.0,
    dist: Annotated[
        str, typer.Option(help="Jittered delays: uniform|normal|exponential|lognormal.")
    ] = "uniform",
    output_tokens: Annotated[int, typer.Option(help="Tokens per answer (capped by max_tokens).")] = 64,
    tokens_per_chunk: Annotated[int, typer.Option(help="Tokens per streamed chunk.")] = 1,
    spec_depth: Annotated[
        int, typer.Option(help="Draw chunk sizes like speculative decoding, this depth.")
    ] = 0,
    spec_accept: Annotated[float, typer.Option(help="Per-draft-token acceptance probability.")] = 0.7,
    reasoning_tokens: Annotated[int, typer.Option(help="Send the first N tokens as reasoning deltas.")] = 0,
    tool_call: Annotated[
        bool, typer.Option(help="Answer with one tool call streamed over the tokens.")
    ] = False,
    role_chunk: Annotated[bool, typer.Option(help="Send a role-only first event.")] = True,
    usage: Annotated[
        str, typer.Option(help="Usage placement: final_chunk|last_token_chunk|none.")
    ] = "final_chunk",
    keepalive_ms: Annotated[
        float | None, typer.Option(help="`: keep-alive` comments during waits this long.")
    ] = None,
    fault: Annotated[list[str] | None, typer.Option(help=FAULT_HELP)] = None,
    script: Annotated[
        Path | None, typer.Option(help="An EmulatorScript JSON file (overrides the options).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for every random draw.")] = 0,
    rogue: Annotated[str | None, typer.Option(help="Play a rogue server (docs/honesty.md): "
                                              + ", ".join(ROGUES) + ".")] = None,
    answers: Annotated[bool, typer.Option("--answers", help="Answer questions like a healthy model (the "
                                          "honest baseline of --rogue): sums, copies, counts, capitals, "
                                          "prompt-dependent prose.")] = False,
    prefix_cache: Annotated[bool, typer.Option("--prefix-cache", help="Report prompt tokens served from a "
                                                "prefix cache, as a caching server does: the longest prefix "
                                                "(in words) shared with any earlier prompt, in "
                                                "`timings.cache_n` and `usage.prompt_tokens_details`. Send it "
                                                "the same prompts twice and rigbench's prefix-cache check "
                                                "untrusts the run (docs/honesty.md).")] = False,
    uvloop: Annotated[bool, typer.Option("--uvloop", help="Run on uvloop (the `fast` extra).")] = False,
) -> None:
    """Serve the reference emulator. GET /emulator/truth returns the true send time of every chunk
    (perf_counter_ns: the machine's monotonic clock); a request may override the script with an
    `x_emulator` object in its body."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: a TCP port is 0..65535 (0: any free port).")
    dists = ("uniform", "normal", "exponential", "lognormal")
    if dist not in dists:
        raise UsageError(f"--dist {dist!r}: choose one of {', '.join(dists)}.")
    if rogue is not None and rogue not in ROGUES:
        raise UsageError(f"unknown rogue {rogue!r}; choose one of {', '.join(ROGUES)}.")
    if rogue is not None and answers:
        raise UsageError("--rogue and --answers exclude each other: a rogue already answers (badly).")
    try:
        if script is not None:
            s = EmulatorScript.model_validate_json(script.read_text())
        else:
            raw: dict[str, Any] = {
                "model": model,
                "ttft": {
                    "dist": dist if ttft_jitter_ms else "fixed",
                    "mean_ms": ttft_ms,
                    "jitter_ms": ttft_jitter_ms,
                },
                "itl": {
                    "dist": dist if itl_jitter_ms else "fixed",
                    "mean_ms": itl_ms,
                    "jitter_ms": itl_jitter_ms,
                },
                "output_tokens": output_tokens,
                "tokens_per_chunk": tokens_per_chunk,
                "spec_depth": spec_depth,
                "spec_accept": spec_accept,
                "reasoning_tokens": reasoning_tokens,
                "tool_call": tool_call,
                "role_chunk": role_chunk,
                "usage": usage,
                "keepalive_ms": keepalive_ms,
                "seed": seed,
                "faults": [json.loads(f) for f in (fault or [])],
                "persona": rogue or ("healthy" if answers else None),
                "prefix_cache": prefix_cache,
            }
            s = EmulatorScript.model_validate(raw)
    except (ValidationError, OSError, ValueError) as e:
        raise UsageError(f"invalid emulator settings: {e}. See `rigbench emulate --help`.") from e
    typer.echo(f"rigbench emulator: {s.model_dump_json()}", err=True)
    with contextlib.suppress(KeyboardInterrupt):
        try:
            serve(s, host=host, port=port, use_uvloop=uvloop)
        except OSError as e:  # the port is taken, or the address is not this machine's
            raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}. Choose another --port (0: any "
                             "free one) or --host.") from e
