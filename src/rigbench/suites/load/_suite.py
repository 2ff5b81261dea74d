"""The load suite: open-loop request-rate windows, or a saturation sweep with an SLO.

Open loop: a dispatcher sends each request at its scheduled time whether or not earlier ones have
finished; the only thing that may hold a request back is `max_concurrency`, and then the wait is
recorded (`LoadRequest.slot_ns`) and counted in its response time. Prompts are built before a
window starts, so preparing them never delays a send.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, NamedTuple

import numpy as np

from rigbench.errors import RigError, UsageError
from rigbench.records import LoadMode, LoadRequest, LoadWindow, StreamResult
from rigbench.rig import HostWindow, RigInfo
from rigbench.rig.engines import get_adapter
from rigbench.sizing import fits_in_context
from rigbench.store import RunReader
from rigbench.suites._context import SuiteContext
from rigbench.suites._memory import check_prompt_memory
from rigbench.suites.load._schedule import arrival_offsets_s, no_full_collection, sleep_until_ns
from rigbench.suites.load._settings import DEFAULT_BURST, LoadSettings
from rigbench.suites.load._trace import TraceRequest, read_trace
from rigbench.suites.speed import ExactPrompt, PromptBuilder

__all__ = ["Dispatched", "LoadSuite", "sweep_rates"]

_perf_ns = time.perf_counter_ns
_TASK = "Continue this conversation naturally and at length."
# Rates of a sweep stop this far under the saturation throughput: at saturation itself the queue
# grows without bound and every latency depends on the window's length, not on the rig.
SWEEP_TOP = 0.95
# The schedule's zero is this far after the dispatcher starts, so the first sends are not late.
_LEAD_NS = 20_000_000
_PREP_PARALLEL = 8
# The filler load windows cut their prompts from, at most this many words (one /tokenize call).
_FILLER_WORDS_MAX = 60_000


def sweep_rates(saturation_rps: float, points: int) -> list[float]:
    """`points` rates evenly spaced from low to just under saturation (SWEEP_TOP of it)."""
    top = saturation_rps * SWEEP_TOP
    return [top * (k + 1) / points for k in range(points)]


class Dispatched(NamedTuple):
    """A window's requests as sent: the schedule's zero, each result (in schedule order, `scheduled_ns` its
    intended start), and when a `max_concurrency` slot freed for it (None: no wait)."""

    start_ns: int
    results: list[StreamResult]
    slot_ns: list[int | None]


class LoadSuite:
    name = "load"

    def __init__(self, settings: LoadSettings) -> None:
        self.settings = settings

    async def run(self, ctx: SuiteContext) -> None:
        s = self.settings
        builder = _builder(ctx)
        if s.trace is not None:
            await self._trace(ctx, builder)
            return
        if s.sessions is not None:
            await self._sessions(ctx, builder, s.rates[0], s.sessions)
            return
        if not s.sweep:
            for k, offered_rate_rps in enumerate(s.rates):
                await self._window(ctx, builder, f"r{k}", offered_rate_rps)
            return
        saturation = await self._saturation(ctx, builder)
        for k, offered_rate_rps in enumerate(sweep_rates(saturation, s.sweep_points)):
            await self._window(ctx, builder, f"r{k}", offered_rate_rps)

    def _lengths(self, ctx: SuiteContext, window: str, n: int) -> list[tuple[int, int]]:
        """(input, output) tokens per request, drawn from the settings' distributions; refused when one
        does not fit the served context (before anything of the window is sent)."""
        s = self.settings
        seed = (ctx.seed * 7919 + sum(map(ord, window)) * 104_729) & 0x7FFFFFFF
        pairs = list(zip(s.input_tokens.draw(n, seed), s.output_tokens.draw(n, seed + 1), strict=True))
        ctx_len = ctx.rig.context_length
        if ctx_len is not None:
            for i, (inp, out) in enumerate(pairs):
                if not fits_in_context(inp, out, ctx_len):
                    raise UsageError(
                        f"load {window}: request {i} drew {inp} input + {out} output tokens (--input-tokens "
                        f"{s.input_tokens.describe()}, --output-tokens {s.output_tokens.describe()}), which do not fit "
                        f"the {ctx_len} tokens the server serves per request; narrow the distributions or serve a "
                        "longer context.")
        return pairs

    def check_rig(self, rig: RigInfo) -> None:
        """Before anything is sent (the gate included): what is known of the requests fits the served context
        and this machine's memory (a trace's every line; a fixed or uniform length's largest)."""
        s = self.settings
        if s.trace is not None:
            self._trace_fits(rig, read_trace(s.trace, s.requests)[1])
            return
        ctx_len = rig.context_length
        inp, out = s.input_tokens.largest, s.output_tokens.largest
        if ctx_len is not None and inp is not None and out is not None and not fits_in_context(inp, out, ctx_len):
            raise UsageError(f"--input-tokens {s.input_tokens.describe()} and --output-tokens {s.output_tokens.describe()} "
                             f"reach {inp} input + {out} output tokens, which do not fit the {ctx_len} tokens the server "
                             "serves per request; give shorter lengths or serve a longer context.")

    def _trace_fits(self, rig: RigInfo, reqs: list[TraceRequest]) -> None:
        s = self.settings
        ctx_len = rig.context_length
        if ctx_len is not None:
            for r in reqs:
                if not fits_in_context(r.input_tokens, r.output_tokens, ctx_len):
                    raise UsageError(f"{s.trace}:{r.line}: {r.input_tokens} input + {r.output_tokens} output tokens do "
                                     f"not fit the {ctx_len} tokens the server serves per request; drop that line, or "
                                     "serve a longer context.")
        check_prompt_memory(f"load trace replay: {s.trace}", [r.input_tokens for r in reqs],
                            "Replay part of it (--requests N, plan: `load: {requests: N}`).")

    async def _trace(self, ctx: SuiteContext, builder: PromptBuilder) -> None:
        s = self.settings
        assert s.trace is not None
        if "load/trace" in ctx.done_units:
            return
        _, reqs = read_trace(s.trace, s.requests)
        self._trace_fits(ctx.rig, reqs)
        span = reqs[-1].offset_s - reqs[0].offset_s
        offered_rate_rps = (len(reqs) - 1) / span if len(reqs) > 1 and span > 0 else None
        await self._send(ctx, builder, "trace", offered_rate_rps, [r.offset_s for r in reqs],
                         [(r.input_tokens, r.output_tokens) for r in reqs], mode="trace")

    async def _saturation(self, ctx: SuiteContext, builder: PromptBuilder) -> float:
        """Every request of the burst at once (as many as the server will take): its completed
        requests per second set the sweep's top rate."""
        uid = "load/saturation"
        if uid in ctx.done_units:
            reader = RunReader(ctx.writer.dir)
            window = next(w for w in reader.records("load_window", LoadWindow) if w.unit_id == uid)
            done = [q for q in reader.records("load_request", LoadRequest) if q.window == "saturation"]
        else:
            n = self.settings.requests or DEFAULT_BURST
            window, done = await self._send(ctx, builder, "saturation", None, [0.0] * n,
                                            self._lengths(ctx, "saturation", n), mode="saturation")
        ok = [q for q in done if q.result.ok]
        if not ok:
            first = next((q.result.error for q in done if q.result.error is not None), None)
            seen = f"{first.kind}: {first.message}" if first is not None else "no request completed"
            raise RigError(f"the sweep stopped: every one of the {len(done)} saturation requests failed ({seen}). "
                           "A server that serves nothing has no saturation rate; check it answers one request "
                           "(`rigbench run --endpoint URL --suite speed`) and try again.")
        end = max(q.result.done_ns or q.result.sent_ns for q in ok)
        wall_s = (end - window.started_ns) / 1e9
        return len(ok) / wall_s

    async def _window(self, ctx: SuiteContext, builder: PromptBuilder, window: str, offered_rate_rps: float) -> None:
        if f"load/{window}" in ctx.done_units:
            return
        s = self.settings
        seed = (ctx.seed * 1_000_003 + int(offered_rate_rps * 1000) * 7919 + len(window)) & 0x7FFFFFFF
        offsets = arrival_offsets_s(offered_rate_rps, s.arrival, s.burstiness, seed=seed,
                                    duration_s=s.window_duration_s,
                                    count=s.count)
        await self._send(ctx, builder, window, offered_rate_rps, offsets, self._lengths(ctx, window, len(offsets)),
                         mode="rate")

    async def _send(self, ctx: SuiteContext, builder: PromptBuilder, window: str, offered_rate_rps: float | None,
                    offsets: list[float], lengths: list[tuple[int, int]],
                    mode: LoadMode) -> tuple[LoadWindow, list[LoadRequest]]:
        s = self.settings
        label = {"rate": f"load {window}: {offered_rate_rps or 0:.3g} req/s {s.arrival}",
                 "saturation": "load saturation: every request at once",
                 "trace": f"load trace replay: {s.trace}"}[mode]
        prompts = await self._prompts(ctx, builder, window, [inp for inp, _ in lengths])
        bodies = [{"model": ctx.rig.model, "messages": p.messages, "max_tokens": out, "temperature": s.temperature,
                   "seed": i, **_forced_length_fields(ctx.rig.engine, out)}
                  for i, (p, (_, out)) in enumerate(zip(prompts, lengths, strict=True))]
        shape = f"{s.input_tokens.describe()} in / {s.output_tokens.describe()} out" if mode != "trace" else "trace lengths"
        task = ctx.progress.task(f"{label} ({len(offsets)} requests, {shape})", len(offsets),
                                 duration_s=s.window_duration_s if mode == "rate" else None)
        # who used the host's CPU while this window's load ran (judged as the speed suite's windows are)
        burst = min(len(offsets), s.max_concurrency or len(offsets))
        host = _host_window(ctx, window, offered_rate_rps, burst)
        async with host or contextlib.nullcontext():
            sent = await self._dispatch(ctx, window, bodies, offsets, task)
        start, results, slot_at = sent.start_ns, sent.results, sent.slot_ns
        ended = max((r.done_ns or r.sent_ns) for r in results)
        records = []
        for i, (p, res, (inp, out)) in enumerate(zip(prompts, results, lengths, strict=True)):
            rec = LoadRequest(unit_id=f"load/{window}/i{i}", window=window, index=i, slot_ns=slot_at[i],
                              input_tokens_target=inp, output_tokens_target=out,
                              input_tokens_measured=p.measured_tokens, input_tokens_shared_max=p.shared_max_tokens,
                              result=res)
            ctx.writer.append(rec)
            records.append(rec)
        if host is not None and host.record is not None:
            ctx.writer.append(host.record)  # before the window record: a finished window always has one
        record = LoadWindow(unit_id=f"load/{window}", window=window, mode=mode,
                            arrival=s.arrival if mode == "rate" else None,
                            burstiness=s.burstiness if mode == "rate" else None, offered_rate_rps=offered_rate_rps,
                            max_concurrency=s.max_concurrency, requests=len(offsets),
                            failed=sum(1 for r in records if not r.result.ok), started_ns=start, ended_ns=ended,
                            slo=s.slo)
        ctx.writer.append(record)  # last: it marks the window complete for resume
        ctx.progress.done(task)
        return record, records

    async def _dispatch(self, ctx: SuiteContext, window: str, bodies: list[dict[str, Any]], offsets: list[float],
                        task: int) -> Dispatched:
        """Send each body at its offset from a zero just ahead (open loop), from this process; every
        result's `scheduled_ns` is its intended start. (`scale.RayLoadSuite` sends from client actors.)"""
        cap = self.settings.max_concurrency
        slots = asyncio.Semaphore(cap) if cap else None
        results: list[StreamResult | None] = [None] * len(offsets)
        slot_at: list[int | None] = [None] * len(offsets)
        # Encoded before the schedule starts, so no send waits on JSON encoding (a stand-in client, as
        # the tests' and the Ray batches' are, takes the dicts).
        encode = getattr(ctx.client, "encode_stream", None)
        payloads = [encode(b) for b in bodies] if encode is not None else bodies

        async def one(i: int, due: int, free_at: int | None) -> None:
            try:
                # the self-check judges the client by when it could send (after any concurrency cap);
                # the record keeps the intended start
                res = await ctx.client.stream_chat(payloads[i], scheduled_ns=free_at or due)
            finally:
                if slots is not None:
                    slots.release()
            results[i] = res if res.scheduled_ns == due else res.model_copy(update={"scheduled_ns": due})
            ctx.progress.advance(task, result=res)

        with no_full_collection():
            start = _perf_ns() + _LEAD_NS
            inflight: list[asyncio.Task[None]] = []
            for i, off in enumerate(offsets):
                due = start + int(off * 1e9)
                await sleep_until_ns(due)
                if slots is not None:
                    if slots.locked():
                        await slots.acquire()
                        slot_at[i] = _perf_ns()
                    else:
                        await slots.acquire()
                inflight.append(asyncio.create_task(one(i, due, slot_at[i])))
            try:
                await asyncio.gather(*inflight)
            finally:
                for t in inflight:
                    t.cancel()
        return Dispatched(start, [r for r in results if r is not None], slot_at)

    async def _sessions(self, ctx: SuiteContext, builder: PromptBuilder, offered_rate_rps: float,
                        sessions: int) -> None:
        """`sessions` sessions start on the arrival schedule (open loop); within one, turn t + 1 is sent as
        soon as turn t's reply has ended (a user answering at once), with the whole history."""
        if "load/r0" in ctx.done_units:
            return
        s, turns = self.settings, self.settings.turns
        seed = (ctx.seed * 1_000_003 + int(offered_rate_rps * 1000) * 7919 + 2) & 0x7FFFFFFF
        offsets = arrival_offsets_s(offered_rate_rps, s.arrival, s.burstiness, seed=seed, count=sessions)
        lengths = self._lengths(ctx, "r0", sessions * turns)
        _sessions_fit(ctx.rig.context_length, lengths, turns)
        prompts = await self._prompts(ctx, builder, "r0", [inp for inp, _ in lengths])
        task = ctx.progress.task(f"load r0: {sessions} sessions of {turns} turns, starting at "
                                 f"{offered_rate_rps:.3g}/s {s.arrival}",
                                 sessions * turns)
        slots = asyncio.Semaphore(s.max_concurrency) if s.max_concurrency else None
        done: list[LoadRequest] = []

        async def session(k: int, due: int) -> None:
            history: list[dict[str, Any]] = []
            shared: int | None = None
            for t in range(turns):
                i = k * turns + t
                inp, out = lengths[i]
                messages = [*history, *prompts[i].messages]
                body = {"model": ctx.rig.model, "messages": messages, "max_tokens": out, "temperature": s.temperature,
                        "seed": i, **_forced_length_fields(ctx.rig.engine, out)}
                free_at = None
                if slots is not None:
                    if slots.locked():
                        await slots.acquire()
                        free_at = _perf_ns()
                    else:
                        await slots.acquire()
                try:
                    res = await ctx.client.stream_chat(body, scheduled_ns=free_at or due)
                finally:
                    if slots is not None:
                        slots.release()
                res = res.model_copy(update={"scheduled_ns": due})
                done.append(LoadRequest(
                    unit_id=f"load/r0/i{i}", window="r0", index=i, slot_ns=free_at, session=k, turn=t,
                    input_tokens_target=inp, output_tokens_target=out,
                    input_tokens_measured=prompts[i].measured_tokens if t == 0 else None,
                    input_tokens_shared_max=prompts[i].shared_max_tokens if t == 0 else shared, result=res))
                ctx.progress.advance(task, result=res)
                if not res.ok:
                    return  # a session whose turn failed has no history to go on with
                history = [*messages, {"role": "assistant", "content": res.content}]
                p, c = res.prompt_tokens, res.completion_tokens
                shared = p + c if p is not None and c is not None else None
                due = res.done_ns or _perf_ns()

        host = _host_window(ctx, "r0", offered_rate_rps, sessions)
        async with host or contextlib.nullcontext():
            with no_full_collection():
                start = _perf_ns() + _LEAD_NS
                running: list[asyncio.Task[None]] = []
                for k, off in enumerate(offsets):
                    due = start + int(off * 1e9)
                    await sleep_until_ns(due)
                    running.append(asyncio.create_task(session(k, due)))
                try:
                    await asyncio.gather(*running)
                finally:
                    for r in running:
                        r.cancel()
        done.sort(key=lambda q: q.index)
        for q in done:
            ctx.writer.append(q)
        if host is not None and host.record is not None:
            ctx.writer.append(host.record)
        ended = max((q.result.done_ns or q.result.sent_ns) for q in done)
        ctx.writer.append(LoadWindow(
            unit_id="load/r0", window="r0", mode="rate", arrival=s.arrival, burstiness=s.burstiness,
            offered_rate_rps=offered_rate_rps, max_concurrency=s.max_concurrency, requests=len(done),
            failed=sum(1 for q in done if not q.result.ok), started_ns=start, ended_ns=ended, slo=s.slo,
            sessions=sessions, turns=turns))
        ctx.progress.done(task)

    async def _prompts(self, ctx: SuiteContext, builder: PromptBuilder, window: str,
                       targets: list[int]) -> list[ExactPrompt]:
        """A prompt of each exact input length, each with its own opening and its own stretch of filler
        (so no prefix is shared beyond the template, and replies can be told apart by prompt): one full
        build, then per request about two calls on one tokenized filler (`PromptBuilder.variant`)."""
        if not targets:
            return []
        check_prompt_memory(f"load {window}", targets, "Send fewer requests a window (--requests, --duration or a "
                            "lower --rate) or shorter ones (--input-tokens).")
        base = (ctx.seed * 7919 + sum(map(ord, window)) * 104_729) & 0xFFFFFF
        first = await builder.build(_TASK, targets[0], base * 4096, ctx.prompt_nonce)
        if first.measured_tokens is None or first.shared_max_tokens is None:  # no tokenizer: approximate, say so
            rest = [await builder.build(_TASK, t, base * 4096 + i, ctx.prompt_nonce)
                    for i, t in enumerate(targets[1:], start=1)]
            return [first, *rest]
        head = first.shared_max_tokens
        # Stretches of one long filler at seeded offsets: apart for a few hundred requests, mostly apart beyond
        words = min(_FILLER_WORDS_MAX, max(targets) * len(targets)) + max(targets) + 256
        filler = await builder.filler_tokens(base, words)
        room = max(1, len(filler) - max(targets))
        offsets = np.random.default_rng(base).integers(0, room, size=len(targets))
        gate = asyncio.Semaphore(_PREP_PARALLEL)

        async def one(i: int, t: int) -> ExactPrompt:
            async with gate:
                return await builder.variant(t, head, _TASK, base * 4096 + i, ctx.prompt_nonce, filler,
                                             int(offsets[i]))

        rest = await asyncio.gather(*(one(i, t) for i, t in enumerate(targets[1:], start=1)))
        return [first, *rest]


def _sessions_fit(ctx_len: int | None, lengths: list[tuple[int, int]], turns: int) -> None:
    """Refuse, before anything is sent, sessions whose later turns would not fit the served context: turn t
    resends every earlier prompt and reply, so its prompt grows with t although each drawn length fits alone
    (a server refuses it, HTTP 400, or cuts its output, minutes into the run). The history is estimated as the
    earlier turns' drawn input + output tokens: each message rendered alone carries the template's opening,
    which the server counts once, so the estimate may run over by that much per turn."""
    if ctx_len is None:
        return
    for first in range(0, len(lengths), turns):
        history = 0
        for t, (inp, out) in enumerate(lengths[first:first + turns]):
            if not fits_in_context(history + inp, out, ctx_len):
                raise UsageError(
                    f"load r0: session {first // turns} turn {t} would resend about {history} tokens of history (its "
                    f"{t} earlier prompts and replies, as drawn) plus {inp} input + {out} output tokens: about "
                    f"{history + inp + out}, over the {ctx_len} tokens the server serves per request. Give fewer "
                    "--turns or shorter --input-tokens/--output-tokens, or serve a longer context.")
            history += inp + out


def _host_window(ctx: SuiteContext, window: str, offered_rate_rps: float | None, burst: int) -> HostWindow | None:
    """The host-conditions window of one load window ("load/r0 rate=5/s"; the saturation burst, or a
    one-request trace, has no rate: "load/saturation c=64"). None: not measured (`ctx.host` unset)."""
    if ctx.host is None:
        return None
    if offered_rate_rps is None:
        return ctx.host.window(f"load/{window}", concurrency=max(1, burst))
    return ctx.host.window(f"load/{window}", rate_rps=offered_rate_rps)


def _forced_length_fields(engine: str, max_tokens: int) -> dict[str, Any]:
    try:
        return get_adapter(engine).forced_length_fields(max_tokens)
    except (KeyError, UsageError):  # an endpoint of an engine rigbench has no adapter for
        return {}


def _builder(ctx: SuiteContext) -> PromptBuilder:
    try:
        adapter = get_adapter(ctx.rig.engine)
    except (KeyError, UsageError):
        adapter = None
    client, model = ctx.client, ctx.rig.model
    if adapter is None:
        async def _none(_: Any) -> None:
            return None

        return PromptBuilder(_none, _none, _none)
    return PromptBuilder(lambda text: adapter.tokenize(client, text), lambda toks: adapter.detokenize(client, toks),
                         lambda messages: adapter.count_chat_tokens(client, model, messages))
