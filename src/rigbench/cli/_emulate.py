"""`rigbench emulate`: serve the reference emulator (an OpenAI-compatible server with scripted
timing and faults) so other clients, rigbench included, can be compared against its truth."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, Field, ValidationError

from rigbench.cli._app import app
from rigbench.cli._typed import options_command
from rigbench.errors import UsageError
from rigbench.inputs import explain, read_text, shown
from rigbench.rig import Flag
from rigbench.testing import ROGUES, EmulatorScript, serve

__all__ = ["emulate"]

# `emulate --help` panels
SERVER, TIMING, STREAM, FAULTS = "Server", "Timing", "Stream shape", "Faults, rogues and answers"

FAULT_HELP = (
    'A fault as JSON, repeatable, e.g. \'{"kind": "disconnect", "every": 10, "at_token": 5}\'. '
    "Kinds: http_status, stall, disconnect, malformed, error_event. A rate limit that lifts: "
    '\'{"kind": "http_status", "status": 429, "until": 2, "headers": {"Retry-After": "1"}}\'.'
)


class EmulateArgs(BaseModel):
    """`rigbench emulate`'s options, declared once (the command is made from them: cli/_typed.py), in the
    help panels of `emulate --help`."""

    port: Annotated[int, Flag("TCP port to listen on.", "--port", "-p", rich_help_panel=SERVER)] = 8000
    host: Annotated[str, Flag("Address to bind.", rich_help_panel=SERVER)] = "127.0.0.1"
    model: Annotated[str, Flag("Model name served on /v1/models.", rich_help_panel=SERVER)] = "emulated-model"
    ttft_ms: Annotated[float, Flag("Mean time to first token, ms.", rich_help_panel=TIMING)] = 50.0
    ttft_jitter_ms: Annotated[float, Flag("TTFT spread, ms (half-width or std dev).", rich_help_panel=TIMING)] = 0.0
    itl_ms: Annotated[float, Flag("Mean delay per generated token, ms.", rich_help_panel=TIMING)] = 10.0
    itl_jitter_ms: Annotated[float, Flag("Per-token delay spread, ms.", rich_help_panel=TIMING)] = 0.0
    dist: Annotated[str, Flag("Jittered delays: uniform, normal, exponential or lognormal.", metavar="NAME",
                              rich_help_panel=TIMING)] = "uniform"
    output_tokens: Annotated[int, Flag("Tokens per answer (capped by max_tokens).", rich_help_panel=STREAM)] = 64
    tokens_per_chunk: Annotated[int, Flag("Tokens per streamed chunk.", rich_help_panel=STREAM)] = 1
    spec_depth: Annotated[int, Flag("Draw chunk sizes like speculative decoding, this depth.",
                                    rich_help_panel=STREAM)] = 0
    spec_accept: Annotated[float, Flag("Per-draft-token acceptance probability.", rich_help_panel=STREAM)] = 0.7
    reasoning_tokens: Annotated[int, Flag("Send the first N tokens as reasoning deltas.",
                                          rich_help_panel=STREAM)] = 0
    tool_call: Annotated[bool, Flag("Answer with one tool call streamed over the tokens.", "--tool-call",
                                    metavar="", rich_help_panel=STREAM)] = False
    role_chunk: Annotated[bool, Flag("Send a role-only first event.", metavar="", rich_help_panel=STREAM)] = True
    usage: Annotated[str, Flag("Usage placement: final_chunk, last_token_chunk or none.", metavar="WHERE",
                               rich_help_panel=STREAM)] = "final_chunk"
    keepalive_ms: Annotated[float | None, Flag("`: keep-alive` comments during waits this long.",
                                               rich_help_panel=TIMING)] = None
    fault: Annotated[list[str], Flag(FAULT_HELP, metavar="JSON", rich_help_panel=FAULTS)] = Field(
        default_factory=list)
    script: Annotated[Path | None, Flag("An EmulatorScript JSON file (overrides the options).",
                                        rich_help_panel=SERVER)] = None
    seed: Annotated[int, Flag("Seed for every random draw.", rich_help_panel=SERVER)] = 0
    rogue: Annotated[str | None, Flag("Play a rogue server (docs/honesty.md): " + ", ".join(ROGUES) + ".",
                                      rich_help_panel=FAULTS)] = None
    answers: Annotated[bool, Flag(
        "Answer questions like a healthy model (the honest baseline of --rogue): sums, copies, counts, capitals, "
        "prompt-dependent prose.", "--answers", metavar="", rich_help_panel=FAULTS)] = False
    prefix_cache: Annotated[bool, Flag(
        "Report prompt tokens served from a prefix cache, as a caching server does: the longest prefix (in words) "
        "shared with any earlier prompt, in `timings.cache_n` and in `usage`'s prompt_tokens_details. Send it the "
        "same prompts twice and rigbench's prefix-cache check untrusts the run (docs/honesty.md).",
        "--prefix-cache", metavar="", rich_help_panel=STREAM)] = False
    slots: Annotated[int | None, Flag(
        "Capacity: at most this many requests generate at once (a server's parallel slots); later ones wait for a "
        "slot, in arrival order, before their TTFT starts (default: no limit).", metavar="N",
        rich_help_panel=TIMING)] = None
    uvloop: Annotated[bool, Flag("Run on uvloop (the `fast` extra).", "--uvloop", metavar="",
                                 rich_help_panel=SERVER)] = False


@app.command()
@options_command(EmulateArgs)
def emulate(ctx: typer.Context | None, o: EmulateArgs) -> None:
    """Serve the reference emulator. GET /emulator/truth returns the true send time of every chunk
    (perf_counter_ns: the machine's monotonic clock); a request may override the script with an
    `x_emulator` object in its body. Its replies are filler unless --answers: `rigbench run` against it
    then fails the known-answer gate (UNTRUSTED), as it should for a server that cannot answer."""
    if not 0 <= o.port <= 65535:
        raise UsageError(f"--port {o.port}: a TCP port is 0..65535 (0: any free port).")
    dists = ("uniform", "normal", "exponential", "lognormal")
    if o.dist not in dists:
        raise UsageError(f"--dist {o.dist!r}: choose one of {', '.join(dists)}.")
    if o.rogue is not None and o.rogue not in ROGUES:
        raise UsageError(f"unknown rogue {o.rogue!r}; choose one of {', '.join(ROGUES)}.")
    if o.rogue is not None and o.answers:
        raise UsageError("--rogue and --answers exclude each other: a rogue already answers (badly).")
    try:
        if o.script is not None:
            s = EmulatorScript.model_validate_json(read_text(o.script, "--script", max_bytes=1 << 20))
        else:
            raw: dict[str, Any] = {
                "model": o.model,
                "ttft": {
                    "dist": o.dist if o.ttft_jitter_ms else "fixed",
                    "mean_ms": o.ttft_ms,
                    "jitter_ms": o.ttft_jitter_ms,
                },
                "itl": {
                    "dist": o.dist if o.itl_jitter_ms else "fixed",
                    "mean_ms": o.itl_ms,
                    "jitter_ms": o.itl_jitter_ms,
                },
                "output_tokens": o.output_tokens,
                "tokens_per_chunk": o.tokens_per_chunk,
                "spec_depth": o.spec_depth,
                "spec_accept": o.spec_accept,
                "reasoning_tokens": o.reasoning_tokens,
                "tool_call": o.tool_call,
                "role_chunk": o.role_chunk,
                "usage": o.usage,
                "keepalive_ms": o.keepalive_ms,
                "seed": o.seed,
                "faults": [json.loads(f) for f in o.fault],
                "persona": o.rogue or ("healthy" if o.answers else None),
                "prefix_cache": o.prefix_cache,
                "slots": o.slots,
            }
            s = EmulatorScript.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "the script"
        raise UsageError(f"invalid emulator settings: {where}: {explain(err)}; got {shown(err.get('input'))}. See "
                         "`rigbench emulate --help`.") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"invalid emulator settings: {shown(str(e), 200)}. See `rigbench emulate --help`.") from None
    typer.echo(f"rigbench emulator: {s.model_dump_json()}", err=True)
    with contextlib.suppress(KeyboardInterrupt):
        try:
            serve(s, host=o.host, port=o.port, use_uvloop=o.uvloop)
        except OSError as e:  # the port is taken, or the address is not this machine's
            raise UsageError(f"cannot listen on {o.host}:{o.port}: {e.strerror or e}. Choose another --port (0: any "
                             "free one) or --host.") from e
