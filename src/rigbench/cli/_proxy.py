"""`rigbench proxy`: a reverse proxy that buffers responses (whole, or flushed on a timer), to see
what a gateway in front of a server does to the figures (docs/honesty.md, "Arrival pattern")."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated, Any

import typer

from rigbench.cli._app import app
from rigbench.errors import UsageError
from rigbench.testing import BufferingProxy

__all__ = ["proxy"]


def _range(option: str, text: str, kind: type[float] | type[int]) -> tuple[Any, Any]:
    """LOW-HIGH (or one value) as two numbers; ValueError naming the option and the text."""
    parts = text.split("-")
    try:
        if len(parts) not in (1, 2):
            raise ValueError
        low, high = (kind(p.strip()) for p in (parts * 2)[:2])
    except ValueError:
        raise ValueError(f"{option} takes LOW-HIGH, e.g. 20-250, not {text!r}") from None
    return low, high


@app.command()
def proxy(
    upstream: Annotated[str, typer.Option(help="The server to forward to, e.g. http://127.0.0.1:8080 "
                                          "(an OpenAI base URL ending in /v1 works too).")],
    mode: Annotated[str, typer.Option(help="whole: send each response in one write once the upstream finished "
                                      "it (nginx `proxy_buffering on`); flush: pass headers at once and write "
                                      "the body out every --period-ms; coalesce: the same at random gaps "
                                      "(--gap-ms, --events).")] = "whole",
    period_ms: Annotated[float, typer.Option(help="Flush period of --mode flush, ms.")] = 100.0,
    gap_ms: Annotated[str, typer.Option(help="--mode coalesce: each write waits a random time in this range, "
                                        "LOW-HIGH ms ...")] = "20-250",
    events: Annotated[str, typer.Option(help="... or until a random number of SSE events in this range, LOW-HIGH, "
                                        "has come in, whichever is first.")] = "2-16",
    seed: Annotated[int | None, typer.Option(help="Seed of --mode coalesce's random gaps and counts.")] = None,
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port to listen on (0: any free port).")] = 8001,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
) -> None:
    """Serve a buffering reverse proxy in front of --upstream. `rigbench run --endpoint` through it
    ends UNTRUSTED for latency, with the buffering named."""
    if not upstream.startswith(("http://", "https://")):
        raise UsageError(f"--upstream must be an http:// or https:// URL, not {upstream!r}.")
    try:
        gaps = _range("--gap-ms", gap_ms, float)
        counts = _range("--events", events, int)
        p = BufferingProxy(upstream, mode=mode, period_ms=period_ms, gap_ms=gaps,  # type: ignore[arg-type]
                           events=counts, seed=seed, host=host, port=port)
    except ValueError as e:
        raise UsageError(f"{e}. See `rigbench proxy --help`.") from e

    async def main() -> None:
        try:
            await p.start()
        except OSError as e:
            raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}. Pick another --port.") from e
        print(f"listening {p.url}", flush=True)
        await p.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
