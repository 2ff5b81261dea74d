"""Serve the emulator in the foreground until interrupted (used by `rigbench emulate` and
`python -m rigbench.testing`)."""

from __future__ import annotations

import asyncio

from rigbench.testing._script import EmulatorScript
from rigbench.testing._server import Emulator

__all__ = ["serve"]


def serve(
    script: EmulatorScript, *, host: str = "127.0.0.1", port: int = 8000, use_uvloop: bool = False
) -> None:
    """Block serving `script`; prints `listening http://HOST:PORT/v1` once the socket is bound."""

    async def main() -> None:
        emu = Emulator(script, host=host, port=port)
        await emu.start()
        print(f"listening {emu.url}", flush=True)
        await emu.serve_forever()

    if use_uvloop:
        # optional: only with --uvloop
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())
