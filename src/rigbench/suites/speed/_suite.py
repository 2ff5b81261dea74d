"""The speed suite: each scenario x concurrency level x repetition, raw observations recorded."""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from typing import Any

from rigbench.errors import LongRunError, UsageError
from rigbench.records import SpeedBatch, SpeedRequest, SpeedSkip, StreamResult
from rigbench.rig import TelemetrySampler
from rigbench.rig.engines import get_adapter
from rigbench.sizing import fits_in_context
from rigbench.suites._context import SuiteContext
from rigbench.suites._memory import check_prompt_memory
from rigbench.suites.speed._prompts import ExactPrompt, PromptBuilder
from rigbench.suites.speed._scenarios import Scenario
from rigbench.suites.speed._settings import SpeedSettings

__all__ = ["MAX_RUN_S", "SpeedSuite"]

# A run projected past this many seconds stops after its first measured batch (unless --allow-long-run).
MAX_RUN_S = 86_400.0


def _forced_length_fields(engine: str, max_tokens: int) -> dict[str, Any]:
    try:
        return get_adapter(engine).forced_length_fields(max_tokens)
    except (KeyError, UsageError):  # an endpoint of an engine rigbench has no adapter for
        return {}


class SpeedSuite:
    name = "speed"

    def __init__(self, settings: SpeedSettings) -> None:
        self.settings = settings

    async def run(self, ctx: SuiteContext) -> None:
        s = self.settings
        t0 = time.monotonic()
        try:
            adapter = get_adapter(ctx.rig.engine)
        except (KeyError, UsageError):  # an endpoint of an engine rigbench has no adapter for
            adapter = None
        client = ctx.client
        model = ctx.rig.model
        if adapter is not None:
            builder = PromptBuilder(
                lambda text: adapter.tokenize(client, text),
                lambda toks: adapter.detokenize(client, toks),
                lambda messages: adapter.count_chat_tokens(client, model, messages),
            )
        else:
            async def _none(_: Any) -> None:
                return None

            builder = PromptBuilder(_none, _none, _none)
        for scenario in s.shapes:
            skip = self._skip_reason(scenario, ctx)
            if skip:
                uid = f"speed/{scenario.name}/skip"
                if uid not in ctx.done_units:
                    ctx.writer.append(SpeedSkip(unit_id=uid, scenario=scenario.name, reason=skip))
                ctx.progress.note(f"{scenario.name}: skipped ({skip})")
                continue
            # Batches are walked lazily (a range per level, the done set asked per batch): memory does not
            # grow with --repetitions. The bar's total is counted, not listed.
            done = {(c, r) for c in s.concurrency for r in self._done_reps(scenario, c, ctx.done_units)}
            # measured requests are counted; warm-up ones are shown apart (never "0/3" for 2 repetitions)
            task = ctx.progress.task(
                f"speed {scenario.name} {scenario.input_tokens}→{scenario.output_tokens}",
                s.repetitions * sum(s.concurrency) - sum(c for c, r in done if r >= 0),
                warmup=s.warmup * sum(s.concurrency) - sum(c for c, r in done if r < 0),
            )
            for conc in s.concurrency:
                if sum(1 for c, _ in done if c == conc) == s.warmup + s.repetitions:
                    continue  # every batch of this level is done: no telemetry window for nothing
                # server telemetry (KV use, queue, speculative counters) before, during (2 Hz), after;
                # host conditions (who used the CPU) over the same window
                window = ctx.host.window(scenario.name, concurrency=conc) if ctx.host is not None else None
                async with TelemetrySampler(ctx.client, ctx.rig.engine) as tel, \
                        (window or contextlib.nullcontext()):
                    projected = False
                    for rep in range(-s.warmup, s.repetitions):
                        if (conc, rep) not in done:
                            wall_s = await self._batch(ctx, builder, scenario, conc, rep, task)
                            if rep >= 0 and not projected:
                                projected = True
                                # counted, not walked: --repetitions may be huge, the done set is small
                                left = s.repetitions - rep - 1 - sum(1 for c, r in done if c == conc and r > rep)
                                self._check_projection(ctx, scenario, conc, wall_s, left, time.monotonic() - t0)
                ctx.writer.append(tel.record(scenario=scenario.name, concurrency=conc))
                if window is not None and window.record is not None:
                    ctx.writer.append(window.record)
            ctx.progress.done(task)

    def _done_reps(self, scenario: Scenario, conc: int, done_units: set[str]) -> list[int]:
        """The repetitions of one level already done (read from the done set, which is small)."""
        prefix = f"speed/{scenario.name}/c{conc}/r"
        reps = []
        for uid in done_units:
            if uid.startswith(prefix):
                try:
                    reps.append(int(uid[len(prefix):]))
                except ValueError:
                    continue
        return [r for r in reps if -self.settings.warmup <= r < self.settings.repetitions]

    @staticmethod
    def _check_projection(ctx: SuiteContext, scenario: Scenario, conc: int, wall_s: float, left: int,
                          elapsed_s: float) -> None:
        """After the first measured batch of a level: stop when its remaining batches alone, at this speed,
        would take the run past a day (a lower bound: other levels and scenarios only add to it)."""
        projected = elapsed_s + wall_s * left
        if projected <= MAX_RUN_S or ctx.allow_long_run:
            return
        raise LongRunError(
            f"{scenario.name} (c={conc}): the first measured batch took {wall_s:.3g} s and {left:,} more batches of "
            f"this level are planned, so this run would take at least {_days(projected)} ({projected:,.0f} s; "
            f"{elapsed_s:,.0f} s so far), more than a day. Stopped here; what was measured is kept. Lower "
            "--repetitions, or continue it anyway with `rigbench run --resume "
            f"{ctx.writer.dir} --allow-long-run` (a plan's rig: set `allow_long_run: true` in the plan file and "
            "resume the plan).")

    @staticmethod
    def _batch_uid(scenario: Scenario, conc: int, rep: int) -> str:
        return f"speed/{scenario.name}/c{conc}/r{rep}"

    def _skip_reason(self, scenario: Scenario, ctx: SuiteContext) -> str | None:
        need = scenario.input_tokens + scenario.output_tokens
        ctx_len = ctx.rig.context_length
        if ctx_len is not None and not fits_in_context(scenario.input_tokens, scenario.output_tokens, ctx_len):
            return (f"needs {need} tokens of context ({scenario.input_tokens} in + {scenario.output_tokens} out) "
                    f"but the server serves {ctx_len} per request")
        return None

    async def _batch(self, ctx: SuiteContext, builder: PromptBuilder, scenario: Scenario, conc: int, rep: int,
                     task: int) -> float:
        """One batch of `conc` requests at once, recorded; returns its wall time in seconds."""
        seed0 = (ctx.seed * 1_000_003 + zlib.crc32(scenario.name.encode()) % 10_007 * 7919 + conc * 131 + (rep + 100) * 17) & 0xFFFFFFF
        check_prompt_memory(f"{scenario.name} c={conc}", [scenario.input_tokens] * conc, "Lower --concurrency.")
        prompts = [await builder.build(scenario.task, scenario.input_tokens, seed0 * 1024 + i, ctx.prompt_nonce)
                   for i in range(conc)]
        extra = _forced_length_fields(ctx.rig.engine, scenario.output_tokens)

        async def one(i: int, prompt: ExactPrompt) -> StreamResult:
            body: dict[str, Any] = {
                "model": ctx.rig.model,
                "messages": prompt.messages,
                "max_tokens": scenario.output_tokens,
                "temperature": self.settings.temperature,
                "seed": seed0 + i,
                **extra,
            }
            res = await ctx.client.stream_chat(body)
            ctx.progress.advance(task, result=res, warmup=rep < 0)
            return res

        started = time.perf_counter_ns()
        results = await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
        ended = time.perf_counter_ns()
        warm = rep < 0
        for i, (prompt, res) in enumerate(zip(prompts, results, strict=True)):
            ctx.writer.append(SpeedRequest(
                unit_id=f"{self._batch_uid(scenario, conc, rep)}/i{i}", scenario=scenario.name,
                concurrency=conc, repetition=rep, warmup=warm, index=i,
                input_tokens_target=scenario.input_tokens, output_tokens_target=scenario.output_tokens,
                input_tokens_measured=prompt.measured_tokens, input_tokens_shared_max=prompt.shared_max_tokens,
                result=res,
            ))
        # The batch record is written last: it marks the batch complete for resume.
        ctx.writer.append(SpeedBatch(
            unit_id=self._batch_uid(scenario, conc, rep), scenario=scenario.name, concurrency=conc,
            repetition=rep, warmup=warm, started_ns=started, ended_ns=ended, requests=len(results),
            failed=sum(1 for r in results if not r.ok),
        ))
        return (ended - started) / 1e9


def _days(seconds: float) -> str:
    """A long duration as a person reads it: 3.2 days, 27.5 h."""
    return f"{seconds / 86_400:,.1f} days" if seconds >= 2 * 86_400 else f"{seconds / 3600:,.1f} h"
