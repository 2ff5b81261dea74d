"""The load suite's open-loop schedule sent from N client actors (`rigbench run --endpoint URL --rate R
--clients N --ray ...`).

One global schedule, split by position: actor k sends arrivals k, k + N, k + 2N, ... Not N independent
streams of rate R/N: merged, those would be Poisson only for Poisson arrivals (N interleaved constant or
gamma streams are neither constant nor gamma), a trace or the saturation burst has one schedule anyway,
and with one schedule the requests, prompts and unit ids are exactly a one-process run's, so resume and
compare work unchanged. Each intended start is on the driver's clock, converted to the actor's with the
offset measured just before the window (scale/_clock.py); every result comes back on the driver's clock.
Schedule adherence is judged over the merged window (analysis, as for one process) and per actor
(`summarize_clients`: each actor's send lag and its sent rate against its share of the schedule).
"""

from __future__ import annotations

from typing import Any

from rigbench.errors import UsageError
from rigbench.scale._clients import ClientPool, measured_from
from rigbench.suites import SuiteContext
from rigbench.suites.load import Dispatched, LoadSuite

__all__ = ["RayLoadSuite", "check_clients_load"]


def check_clients_load(settings: Any) -> None:
    """What the actors cannot split: a concurrency cap (one shared count) and sessions (turns wait on replies)."""
    if settings.max_concurrency is not None:
        raise UsageError(f"--max-concurrency {settings.max_concurrency} caps requests in flight across one "
                         "process; with --clients the actors share no count. Drop --max-concurrency, or offer the "
                         "load from one process (drop --ray and --clients).")
    if settings.sessions is not None:
        raise UsageError("--sessions with --clients is not built: a session's turns wait on its own replies, which "
                         "one process keeps. Drop --ray and --clients for multi-turn sessions.")


class RayLoadSuite(LoadSuite):
    """The load suite with every window's requests sent from a ClientPool (records identical in shape,
    plus a `client_share` per actor and window)."""

    def __init__(self, inner: LoadSuite, pool: ClientPool) -> None:
        check_clients_load(inner.settings)
        super().__init__(inner.settings)
        self.pool = pool

    async def run(self, ctx: SuiteContext) -> None:
        async with measured_from(self.pool, ctx, self.name):
            await super().run(ctx)

    async def _dispatch(self, ctx: SuiteContext, window: str, bodies: list[dict[str, Any]], offsets: list[float],
                        task: int) -> Dispatched:
        zero, results, shares = await self.pool.run_schedule(bodies, offsets, f"load/{window}")
        for s in shares:
            ctx.writer.append(s)
        ctx.progress.advance(task, len(results))
        return Dispatched(zero, results, [None] * len(results))
