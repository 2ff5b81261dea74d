"""What every suite gets from `rigbench run`, and the one method it must have.

A suite turns its slice of the plan into records appended to the run (`ctx.writer.append`).
It never prints and never computes statistics: progress goes through `ctx.progress`,
statistics live in `rigbench.analysis`.

Resume: every record a suite writes carries a `unit_id` that is stable across runs of the same
plan (e.g. "speed/chat_short/c1/r3"); `ctx.done_units` holds the ids already in the run, and a
suite skips those units.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Protocol

from rigbench.client import ChatClient
from rigbench.records import StreamResult
from rigbench.rig import HostWatch, RigInfo
from rigbench.store import RunWriter

__all__ = ["NullProgress", "Progress", "Suite", "SuiteContext"]


class Progress(Protocol):
    """What a suite tells the display. `task`: `total` measured units, plus `warmup` warm-up units that
    are not counted in it; `duration_s`: the task offers load for this long (a rate window). `advance`:
    units done; `result`, the request that just ended (for live figures); `warmup`, they were warm-up."""

    def task(self, description: str, total: int | None, *, warmup: int = 0,
             duration_s: float | None = None) -> int: ...
    def advance(self, task_id: int, n: int = 1, *, result: StreamResult | None = None,
                warmup: bool = False) -> None: ...
    def done(self, task_id: int) -> None: ...
    def note(self, message: str) -> None: ...


class NullProgress:
    def task(self, description: str, total: int | None, *, warmup: int = 0, duration_s: float | None = None) -> int:
        return 0

    def advance(self, task_id: int, n: int = 1, *, result: StreamResult | None = None, warmup: bool = False) -> None:
        pass

    def done(self, task_id: int) -> None:
        pass

    def note(self, message: str) -> None:
        pass


@dataclass
class SuiteContext:
    client: ChatClient
    writer: RunWriter
    rig: RigInfo
    progress: Progress = field(default_factory=NullProgress)
    done_units: set[str] = field(default_factory=set)
    seed: int = 0
    # Fresh per run, in every speed prompt's opening: the seed makes prompts reproducible in shape,
    # and without this a second run with the same seed sends the same prompts, which a server's
    # prefix cache (llama.cpp's slot cache, vLLM/SGLang prefix caching) serves without a prefill.
    prompt_nonce: str = field(default_factory=lambda: secrets.token_hex(4))
    # Measures who used the host's CPU around each measured window (None: not measured, and the
    # report says "host conditions: not recorded").
    host: HostWatch | None = None
    # Run on when the measured speed projects the run past a day (`--allow-long-run`); else stop there.
    allow_long_run: bool = False


class Suite(Protocol):
    """A suite may also have `check_rig(rig: RigInfo) -> None`: the runner calls it once the rig is up and
    before anything is sent (the gate included), to refuse requests the rig cannot serve (a trace line over
    the served context)."""

    name: str

    async def run(self, ctx: SuiteContext) -> None: ...
