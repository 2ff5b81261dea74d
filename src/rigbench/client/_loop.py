"""The event loop the client runs on: uvloop when installed, else the standard one.

Chosen by measurement (docs/benchmarks.md): with uvloop, a burst of 512 chunks written at the same
instant (a server's decode step) is stamped within 1 ms at p99; with the standard loop the p99
error is a few ms, and per-event CPU at a realistic pace is ~20% lower. Set RIGBENCH_EVENT_LOOP=asyncio
to force the standard loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["event_loop_name", "run"]

T = TypeVar("T")


def _use_uvloop() -> bool:
    if os.environ.get("RIGBENCH_EVENT_LOOP", "").lower() == "asyncio":
        return False
    try:
        # optional: uvloop is absent on Windows (and may be uninstalled); then asyncio runs
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def event_loop_name() -> str:
    """'uvloop' or 'asyncio': what `run` will use."""
    return "uvloop" if _use_uvloop() else "asyncio"


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to completion on the chosen loop (the CLI's replacement for asyncio.run)."""
    if _use_uvloop():
        # optional: only when _use_uvloop() found it
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
