"""The speed suite's load from N client actors (`rigbench run --endpoint URL --clients N --ray ...`).

Each actor is a Ray actor with its own event loop (uvloop when installed) on its own thread and its
own `ChatClient`. The driver keeps the speed suite as it is: it builds every prompt and request body
(same seeds, same unit ids), and `_DistributedBatch` stands in for the client and the writer of one
batch: the batch's bodies are split round-robin over the actors, every actor starts its share at one
instant of the driver's clock (converted to its own with the offset measured just before), and the
results come back shifted onto the driver's clock. The batch record then carries the real span of
the load (first actor's start to last actor's end), so per-request and aggregate figures come out of
`analysis` exactly as for one process.

Clocks: `_clock.py`. Each actor is aligned before the load and after it (ClientClock records) and
again before every batch (the offset used for that batch, in its ClientShare records). An offset
whose uncertainty exceeds the timing bound (1 ms, the single-process bound of docs/metrics.md)
makes the run untrusted, naming the actor. Each actor runs its own self-check (label
"speed@<actor>"), so the client-bound verdict names the actor that was the bottleneck.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

from rigbench.analysis import request_timing
from rigbench.client import ChatClient, EncodedBody, SelfCheckMonitor, use_monitor
from rigbench.errors import UsageError
from rigbench.records import ClientClock, ClientShare, SelfCheck, SpeedBatch, StreamResult
from rigbench.scale._clock import ClockEcho, ClockSample, best_sample, ping_udp
from rigbench.suites import SuiteContext
from rigbench.suites.load import no_full_collection, sleep_until_ns
from rigbench.suites.speed import SpeedSuite

__all__ = ["CLOCK_BOUND_NS", "ClientActor", "ClientPool", "RaySpeedSuite", "shift_result"]

T = TypeVar("T")
_perf_ns = time.perf_counter_ns
CLOCK_BOUND_NS = 1_000_000  # the single-process timing bound (p99 within 1 ms, tests/unit/test_accuracy.py)
ALIGN_ROUNDS = 40
BATCH_ALIGN_ROUNDS = 8
START_MARGIN_NS = 50_000_000  # barrier: every share is sent this long before it is due
_NS_FIELDS = [n for n in StreamResult.model_fields if n.endswith("_ns")]


def shift_result(r: StreamResult, delta_ns: int) -> StreamResult:
    """The same result with every clock stamp moved by `delta_ns` (offsets within it unchanged)."""
    upd: dict[str, Any] = {}
    for name in _NS_FIELDS:
        v = getattr(r, name)
        if isinstance(v, list):
            upd[name] = [x + delta_ns for x in v]
        elif v is not None:
            upd[name] = v + delta_ns
    a = r.arrival
    if a is not None and a.clock_offset_ns is not None:  # raw kernel stamp = chunk_kernel_ns + offset, still
        upd["arrival"] = a.model_copy(update={"clock_offset_ns": a.clock_offset_ns - delta_ns})
    return r.model_copy(update=upd)


def _new_loop() -> asyncio.AbstractEventLoop:
    if os.environ.get("RIGBENCH_EVENT_LOOP", "").lower() != "asyncio":
        try:
            # optional: uvloop may be absent; then asyncio runs
            import uvloop

            return uvloop.new_event_loop()
        except ImportError:
            pass
    return asyncio.new_event_loop()


class ClientActor:
    """Lives in a Ray worker: an event loop on its own thread, a streaming client, a clock echo.

    `skew_ns` and `echo_delay_s` are for tests: they play an actor whose clock is off by a known
    amount, and one whose clock cannot be pinned down within the bound.
    """

    def __init__(self, name: str, base_url: str, api_key: str | None, *, skew_ns: int = 0,
                 echo_delay_s: float = 0.0) -> None:
        # lazy: ray is optional (the `ray` extra); this class only runs as a Ray actor
        import ray

        self.name = name
        self.skew_ns = skew_ns
        self.node = ray.util.get_node_ip_address()
        self.loop = _new_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=f"rigbench-{name}", daemon=True)
        self._thread.start()
        self.client = ChatClient(base_url, api_key=api_key)
        self._mon: SelfCheckMonitor | None = None
        self._prepared: list[EncodedBody] = []  # the next schedule's bodies (prepare_schedule)
        self._mon_stop: asyncio.Event | None = None
        self._mon_task: asyncio.Future[SelfCheck | None] | None = None
        transport, _ = self._call(self.loop.create_datagram_endpoint(
            lambda: ClockEcho(self.now_ns, echo_delay_s), local_addr=(self.node, 0)))
        self.udp_port = transport.get_extra_info("sockname")[1]

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def now_ns(self) -> int:
        return _perf_ns() + self.skew_ns

    def where(self) -> tuple[str, str, int, int]:
        return self.name, self.node, self.udp_port, os.getpid()

    def selfcheck_begin(self, label: str) -> None:
        async def span() -> SelfCheck | None:
            self._mon_stop = asyncio.Event()
            async with SelfCheckMonitor(label) as mon:
                self._mon = mon
                await self._mon_stop.wait()
            self._mon = None
            return mon.record

        self._mon_task = asyncio.run_coroutine_threadsafe(span(), self.loop)  # type: ignore[assignment]
        deadline = time.monotonic() + 10
        while self._mon is None and time.monotonic() < deadline:
            time.sleep(0.001)

    def selfcheck_end(self) -> SelfCheck | None:
        if self._mon_task is None or self._mon_stop is None:
            return None
        self.loop.call_soon_threadsafe(self._mon_stop.set)
        return self._mon_task.result()

    def run_share(self, bodies: list[dict[str, Any]], start_at_ns: int) -> tuple[list[StreamResult], int, int]:
        """Send `bodies` together at `start_at_ns` (this actor's clock); results on this actor's clock."""
        return self._call(self._share(bodies, start_at_ns))

    async def _share(self, bodies: list[dict[str, Any]], start_at_ns: int) -> tuple[list[StreamResult], int, int]:
        if self._mon is not None:  # the requests' send lags go to this actor's self-check
            use_monitor(self._mon)
        wait_s = (start_at_ns - self.now_ns()) / 1e9
        if wait_s > 0:
            await asyncio.sleep(wait_s)
        started = _perf_ns()
        results = await asyncio.gather(*(self.client.stream_chat(b) for b in bodies))
        ended = _perf_ns()
        s = self.skew_ns
        return [shift_result(r, s) if s else r for r in results], started + s, ended + s

    def prepare_schedule(self, bodies: list[dict[str, Any]]) -> int:
        """Encode this actor's share of a schedule ahead of it (`run_schedule` sends them), as the
        single-process dispatcher does before its zero: 10,000 bodies take about 200 ms to encode, which
        must not come out of the margin before the first send is due. Returns how many are held."""
        self._prepared = [self.client.encode_stream(b) for b in bodies]
        return len(self._prepared)

    def run_schedule(self, due_ns: list[int]) -> tuple[list[StreamResult], int, int]:
        """Send each prepared body at its own due time (this actor's clock), open loop; results on this
        actor's clock, `scheduled_ns` the due time."""
        payloads, self._prepared = self._prepared, []
        if len(payloads) != len(due_ns):
            raise RuntimeError(f"{self.name}: {len(due_ns)} due times for {len(payloads)} prepared bodies")
        return self._call(self._schedule(payloads, due_ns))

    async def _schedule(self, payloads: list[EncodedBody], due_ns: list[int]) -> tuple[list[StreamResult], int, int]:
        if self._mon is not None:  # send lags against each request's due time go to this actor's self-check
            use_monitor(self._mon)
        s = self.skew_ns
        tasks = []
        with no_full_collection():  # as the single-process dispatcher: no full collection while sending
            for body, due in zip(payloads, due_ns, strict=True):
                await sleep_until_ns(due, self.now_ns)
                tasks.append(asyncio.create_task(self.client.stream_chat(body, scheduled_ns=due - s)))
            try:
                results = await asyncio.gather(*tasks)
            finally:
                for t in tasks:
                    t.cancel()
        started = min(r.sent_ns for r in results)
        ended = max(r.done_ns or r.sent_ns for r in results)
        return [shift_result(r, s) if s else r for r in results], started + s, ended + s

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._call(self.client.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)


@dataclasses.dataclass
class _Member:
    name: str
    handle: Any
    node: str = ""
    udp_port: int = 0
    clock: ClockSample | None = None


class ClientPool:
    """The driver's handle on N client actors."""

    def __init__(self, ray: Any, n: int, base_url: str, api_key: str | None, *, cpus_per_client: float = 1.0,
                 skew_ns: dict[int, int] | None = None, echo_delay_s: dict[int, float] | None = None,
                 base_urls: list[str] | None = None) -> None:
        self.ray = ray
        self.n = n
        self.base_url = base_url
        self.base_urls = base_urls or [base_url]  # actor i drives base_urls[i % len] (benchmarks: one server each)
        self.api_key = api_key
        self.cpus = cpus_per_client
        self._skew = skew_ns or {}
        self._delay = echo_delay_s or {}
        self.members: list[_Member] = []

    async def _get(self, refs: Any) -> Any:
        return await asyncio.to_thread(self.ray.get, refs)

    async def start(self) -> None:
        cls = self.ray.remote(ClientActor)
        for i in range(self.n):
            name = f"client{i}"
            h = cls.options(num_cpus=self.cpus, scheduling_strategy="SPREAD", max_restarts=0,
                            name=None).remote(name, self.base_urls[i % len(self.base_urls)], self.api_key,
                                              skew_ns=self._skew.get(i, 0),
                                              echo_delay_s=self._delay.get(i, 0.0))
            self.members.append(_Member(name, h))
        try:
            async with asyncio.timeout(300):  # not wait_for: it can swallow a Ctrl-C on Python 3.11
                wheres = await self._get([m.handle.where.remote() for m in self.members])
        except TimeoutError:
            self.stop()
            raise UsageError(f"the Ray cluster did not start {self.n} client actor(s) of {self.cpus:g} CPU each "
                             "within 300 s: it has too few free CPUs. Lower --clients, or add nodes.") from None
        except self.ray.exceptions.RayError as e:
            self.stop()
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            raise UsageError(f"a client actor could not start on the Ray cluster: {lines[-1] if lines else e}. "
                             "Every node needs rigbench and the same Ray as this machine "
                             "(pip install 'rigbench[ray]').") from None
        for m, (_, node, port, _pid) in zip(self.members, wheres, strict=True):
            m.node, m.udp_port = node, port

    async def _align_one(self, m: _Member, rounds: int) -> ClockSample:
        sample = await asyncio.to_thread(ping_udp, m.node, m.udp_port, rounds)
        if sample is None:  # no UDP path to the actor's node: Ray calls, with a longer round trip
            got = []
            for _ in range(rounds):
                t0 = _perf_ns()
                t1 = await self._get(m.handle.now_ns.remote())
                got.append((t0, t1, _perf_ns()))
            sample = best_sample(got, "ray")
        m.clock = sample
        return sample

    async def align(self, phase: Literal["before", "after"], rounds: int = ALIGN_ROUNDS) -> list[ClientClock]:
        out = []
        for m in self.members:  # one at a time: the pings must not queue behind each other
            s = await self._align_one(m, rounds)
            out.append(ClientClock(unit_id=f"clients/clock/{m.name}/{phase}", actor=m.name, node=m.node,
                                   phase=phase, offset_ns=s.offset_ns, uncertainty_ns=s.uncertainty_ns,
                                   rtt_min_ns=s.rtt_ns, samples=s.samples, method=s.method))
        return out

    async def selfcheck_begin(self, label: str) -> None:
        await self._get([m.handle.selfcheck_begin.remote(f"{label}@{m.name}") for m in self.members])

    async def selfcheck_end(self) -> list[SelfCheck]:
        got = await self._get([m.handle.selfcheck_end.remote() for m in self.members])
        return [g for g in got if g is not None]

    async def run_batch(self, bodies: list[dict[str, Any]], batch_uid: str) -> tuple[list[StreamResult],
                                                                                       list[ClientShare]]:
        shares = [list(range(i, len(bodies), self.n)) for i in range(self.n)]
        busy = [(m, idx) for m, idx in zip(self.members, shares, strict=True) if idx]
        for m, _ in busy:
            await self._align_one(m, BATCH_ALIGN_ROUNDS)
        start = _perf_ns() + START_MARGIN_NS + 100_000 * len(bodies)
        refs = []
        for m, idx in busy:
            assert m.clock is not None
            refs.append(m.handle.run_share.remote([bodies[i] for i in idx], start + m.clock.offset_ns))
        outs = await self._get(refs)
        results: list[StreamResult | None] = [None] * len(bodies)
        recs: list[ClientShare] = []
        for (m, idx), (res, started, ended) in zip(busy, outs, strict=True):
            assert m.clock is not None
            off = m.clock.offset_ns
            tokens = 0
            for i, r in zip(idx, res, strict=True):
                results[i] = shift_result(r, -off)
                tokens += request_timing(r).output_tokens if r.ok else 0
            recs.append(ClientShare(
                unit_id=f"{batch_uid}/{m.name}", batch_unit_id=batch_uid, actor=m.name, node=m.node,
                indices=idx, output_tokens=tokens, started_ns=started - off, ended_ns=ended - off,
                barrier_late_ns=max(0, started - off - start), offset_ns=off,
                offset_uncertainty_ns=m.clock.uncertainty_ns))
        assert all(r is not None for r in results)
        return [r for r in results if r is not None], recs

    async def run_schedule(self, bodies: list[dict[str, Any]], offsets_s: list[float], unit_id: str,
                           lead_ns: int = START_MARGIN_NS) -> tuple[int, list[StreamResult], list[ClientShare]]:
        """One open-loop schedule split over the actors: actor k sends arrivals k, k + N, k + 2N, ... (every
        Nth of the one schedule), each at its intended start on the driver's clock converted to the actor's
        own with the offset measured just before. Returns the schedule's zero (driver clock), every result
        on the driver's clock (`scheduled_ns`: the intended start) and each actor's share."""
        shares = [list(range(i, len(bodies), self.n)) for i in range(self.n)]
        busy = [(m, idx) for m, idx in zip(self.members, shares, strict=True) if idx]
        # the bodies travel and are encoded before the zero is set: only the due times ride on the margin
        await self._get([m.handle.prepare_schedule.remote([bodies[i] for i in idx]) for m, idx in busy])
        for m, _ in busy:
            await self._align_one(m, BATCH_ALIGN_ROUNDS)
        zero = _perf_ns() + lead_ns + 100_000 * len(busy)
        due = [zero + int(off * 1e9) for off in offsets_s]
        refs = []
        for m, idx in busy:
            assert m.clock is not None
            refs.append(m.handle.run_schedule.remote([due[i] + m.clock.offset_ns for i in idx]))
        outs = await self._get(refs)
        results: list[StreamResult | None] = [None] * len(bodies)
        recs: list[ClientShare] = []
        for (m, idx), (res, started, ended) in zip(busy, outs, strict=True):
            assert m.clock is not None
            off = m.clock.offset_ns
            tokens = 0
            for i, r in zip(idx, res, strict=True):
                results[i] = shift_result(r, -off).model_copy(update={"scheduled_ns": due[i]})
                tokens += request_timing(r).output_tokens if r.ok else 0
            recs.append(ClientShare(
                unit_id=f"{unit_id}/{m.name}", batch_unit_id=unit_id, actor=m.name, node=m.node, indices=idx,
                output_tokens=tokens, started_ns=started - off, ended_ns=ended - off,
                barrier_late_ns=max(0, started - off - due[idx[0]]), offset_ns=off,
                offset_uncertainty_ns=m.clock.uncertainty_ns))
        return zero, [r for r in results if r is not None], recs

    def stop(self) -> None:
        for m in self.members:
            with contextlib.suppress(Exception):
                self.ray.get(m.handle.close.remote(), timeout=10)
            with contextlib.suppress(Exception):
                self.ray.kill(m.handle)
        self.members = []


class _DistributedBatch:
    """One batch's stand-in client (collects the suite's requests, sends them from the actors) and
    writer (puts the actors' shares and the batch's true span into the records)."""

    def __init__(self, pool: ClientPool, expected: int, writer: Any, batch_uid: str) -> None:
        self.pool, self.expected, self.writer, self.batch_uid = pool, expected, writer, batch_uid
        self.bodies: list[dict[str, Any]] = []
        self.futures: list[asyncio.Future[StreamResult]] = []
        self.shares: list[ClientShare] = []
        self._task: asyncio.Task[None] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.writer, name)

    async def stream_chat(self, body: dict[str, Any], **_: Any) -> StreamResult:
        fut: asyncio.Future[StreamResult] = asyncio.get_running_loop().create_future()
        self.bodies.append(body)
        self.futures.append(fut)
        if len(self.bodies) == self.expected:
            self._task = asyncio.create_task(self._dispatch())
        return await fut

    async def _dispatch(self) -> None:
        try:
            results, self.shares = await self.pool.run_batch(self.bodies, self.batch_uid)
        except BaseException as e:
            for f in self.futures:
                if not f.done():
                    f.set_exception(e)
            raise
        for f, r in zip(self.futures, results, strict=True):
            f.set_result(r)

    def append(self, record: Any) -> None:
        if isinstance(record, SpeedBatch) and record.unit_id == self.batch_uid and self.shares:
            for s in self.shares:
                self.writer.append(s)
            record = record.model_copy(update={"started_ns": min(s.started_ns for s in self.shares),
                                               "ended_ns": max(s.ended_ns for s in self.shares)})
        self.writer.append(record)



@asynccontextmanager
async def measured_from(pool: ClientPool, ctx: SuiteContext, suite: str) -> AsyncIterator[None]:
    """A suite's run from the pool's actors: their clocks aligned before and after it, and their
    self-checks around it (records written even when the suite fails)."""
    for c in await pool.align("before"):
        ctx.writer.append(c)
    await pool.selfcheck_begin(suite)
    try:
        yield
    finally:
        for sc in await pool.selfcheck_end():
            ctx.writer.append(sc)
        for c in await pool.align("after"):
            ctx.writer.append(c)


class RaySpeedSuite(SpeedSuite):
    """The speed suite with its load sent from a ClientPool (records identical in shape)."""

    def __init__(self, inner: SpeedSuite, pool: ClientPool) -> None:
        super().__init__(inner.settings)
        self.pool = pool

    async def run(self, ctx: SuiteContext) -> None:
        async with measured_from(self.pool, ctx, self.name):
            await super().run(ctx)

    async def _batch(self, ctx: SuiteContext, builder: Any, scenario: Any, conc: int, rep: int,
                     task: int) -> float:
        batch = _DistributedBatch(self.pool, conc, ctx.writer, self._batch_uid(scenario, conc, rep))
        sub = dataclasses.replace(ctx, client=batch, writer=batch)  # type: ignore[arg-type]
        return await super()._batch(sub, builder, scenario, conc, rep, task)
