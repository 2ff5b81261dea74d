"""Server telemetry: scrape the engine's Prometheus `/metrics` before, during and after a scenario.

Raw samples only (canonical name -> value, per client-monotonic timestamp); acceptance length,
KV peaks and the rest are derived in `rigbench.analysis` from the stored record.

Metric names live in the engine adapters: `metric_names` (canonical name -> the engine's), with
`metric_fallbacks` for older versions, and `per_position_metric`, the accepted-tokens-per-draft-position
counter labelled `position` (None where the engine exports none). This module names no engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import aiohttp

from rigbench.client import ChatClient
from rigbench.errors import UsageError
from rigbench.records import Phase, TelemetryRecord, TelemetrySample
from rigbench.rig._background import stop_task
from rigbench.rig.engines import EngineAdapter, canonical_values, get_adapter, parse_prometheus

__all__ = ["TelemetrySampler"]


class TelemetrySampler:
    """`async with TelemetrySampler(client, engine_name) as tel: <run the scenario>`; then `tel.record(...)`.

    Scrapes once before, every `interval_s` while the block runs, and once after. A missing or
    failing endpoint never stops the scenario: it becomes `unavailable` / per-sample `error`.
    """

    def __init__(self, client: ChatClient, engine: str, *, interval_s: float = 0.5,
                 metrics_path: str | None = None, timeout_s: float = 2.0) -> None:
        if interval_s > 1.0:
            raise ValueError("telemetry must be sampled at 1 Hz or faster (interval_s <= 1.0)")
        self.engine = engine
        self.adapter: EngineAdapter | None = None
        try:
            self.adapter = get_adapter(engine)
        except UsageError:  # an engine rigbench has no metric names for: record why, sample nothing
            self.adapter = None
        path = metrics_path or (self.adapter.metrics_path if self.adapter is not None else None) or "/metrics"
        self.url = client.server_root + path
        self.client = client
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.samples: list[TelemetrySample] = []
        self.unavailable: str | None = None if self.adapter is not None else f"no metric names for engine {engine!r}"
        self._task: asyncio.Task[None] | None = None

    async def scrape(self, phase: Phase) -> TelemetrySample | None:
        if self.unavailable is not None or self.adapter is None:
            return None
        t0 = time.perf_counter_ns()
        try:
            status, text = await self.client.get_text(self.url, timeout_s=self.timeout_s)
        except (TimeoutError, OSError, aiohttp.ClientError) as e:
            s = TelemetrySample(t_ns=time.perf_counter_ns(), phase=phase, scrape_s=(time.perf_counter_ns() - t0) / 1e9,
                                error=f"{type(e).__name__}: {e}")
            self.samples.append(s)
            return s
        t1 = time.perf_counter_ns()
        if status != 200:
            # llama-server without --metrics answers 501; a proxy may answer 404
            self.unavailable = f"GET {self.url} -> HTTP {status}: {text[:120].strip()}"
            return None
        values = canonical_values(self.adapter, text)
        for canonical, name in self.adapter.extra_gauges.items():
            series = parse_prometheus(text).get(name)
            if series:
                values[canonical] = max(s.value for s in series)
        per_pos: dict[int, float] = {}
        pos_name = self.adapter.per_position_metric
        if pos_name:
            for ms in parse_prometheus(text).get(pos_name, []):
                with contextlib.suppress(KeyError, ValueError):
                    p = int(ms.labels["position"])
                    per_pos[p] = per_pos.get(p, 0.0) + ms.value
        sample = TelemetrySample(t_ns=t1, phase=phase, scrape_s=(t1 - t0) / 1e9, values=values,
                                 accepted_per_pos=per_pos)
        self.samples.append(sample)
        return sample

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            if self.unavailable is not None:
                return
            await self.scrape("during")

    async def __aenter__(self) -> TelemetrySampler:
        self.samples = []
        await self.scrape("before")
        self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            await stop_task(self._task)
            self._task = None
        await self.scrape("after")

    def record(self, *, scenario: str, concurrency: int, unit_id: str | None = None) -> TelemetryRecord:
        names = dict(self.adapter.metric_names) if self.adapter is not None else {}
        if self.adapter is not None and self.adapter.per_position_metric:
            names["spec_accepted_per_pos"] = self.adapter.per_position_metric
        if self.adapter is not None:
            names.update(self.adapter.extra_gauges)
        return TelemetryRecord(
            unit_id=unit_id or f"telemetry/{scenario}/c{concurrency}", scenario=scenario, concurrency=concurrency,
            engine=self.engine, metrics_url=self.url, interval_s=self.interval_s, samples=list(self.samples),
            metric_names=names, unavailable=self.unavailable,
        )
