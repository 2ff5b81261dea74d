"""Stopping a sampler's background task without swallowing the run's own cancel."""

from __future__ import annotations

import asyncio

__all__ = ["stop_task"]


async def stop_task(task: asyncio.Task[None]) -> None:
    """Cancel `task` and wait for it. Its CancelledError is the one asked for and is swallowed; but a
    cancel of the caller itself (Ctrl-C) landing here is re-raised, or the run would carry on as if
    never interrupted."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        me = asyncio.current_task()
        if me is not None and me.cancelling():
            raise
