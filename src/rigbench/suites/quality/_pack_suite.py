"""Run task packs, plain (`packs`) or once per reasoning-effort level (`effort`)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from rigbench.analysis import split_reasoning, split_tokens
from rigbench.errors import UsageError
from rigbench.records import PackAnswer, PackConfig, StreamResult
from rigbench.sandbox import require_confinement
from rigbench.suites._context import SuiteContext
from rigbench.suites.quality._graders import grade
from rigbench.suites.quality._knobs import effort_request_fields
from rigbench.suites.quality._packs import CodeGrader, Pack, Task, load_pack
from rigbench.suites.quality._settings import EffortSettings, PackSettings

__all__ = ["EffortSweepSuite", "PackSuite", "grade_task"]


async def grade_task(task: Task, result: StreamResult, *, suite: Literal["packs", "effort"], pack: str,
                     unit_id: str, effort: str | None, repetition: int,
                     allow_unconfined: bool = False) -> PackAnswer:
    """Grade one response with every grader of its task; correct only if all pass."""
    split = split_reasoning(result)
    tokens = split_tokens(result)
    grades = ([await grade(g, split.answer, allow_unconfined=allow_unconfined) for g in task.graders]
              if result.ok else [])
    return PackAnswer(
        unit_id=unit_id, suite=suite, pack=pack, task_id=task.id, language=task.language, effort=effort,
        repetition=repetition, grades=grades, correct=result.ok and all(g.passed for g in grades),
        answer_chars=len(split.answer), reasoning_form=split.form,
        reasoning_tokens=tokens.reasoning_tokens, answer_tokens=tokens.answer_tokens,
        token_split=tokens.method, result=result,
    )


def _check_sandbox(packs: list[Pack], allow_unconfined: bool) -> None:
    """Before any request: a pack with `code` graders needs the sandbox (or --allow-unconfined)."""
    if any(isinstance(g, CodeGrader) for p in packs for t in p.tasks for g in t.graders):
        require_confinement(allow_unconfined)


def _select(pack: Pack, tasks: list[str] | None) -> Pack:
    if tasks is None:
        return pack
    unknown = sorted(set(tasks) - {t.id for t in pack.tasks})
    if unknown:
        raise UsageError(f"pack {pack.name} has no task(s) {unknown}; its tasks: {[t.id for t in pack.tasks]}")
    return pack.model_copy(update={"tasks": [t for t in pack.tasks if t.id in tasks]})


async def _run_pack(ctx: SuiteContext, pack: Pack, *, suite: Literal["packs", "effort"],
                    levels: list[str | None], engine: str, repetitions: int, concurrency: int,
                    max_tokens: int | None, extra_body: dict[str, Any], allow_unconfined: bool) -> None:
    prefix = f"{suite}/{pack.name}"
    knobs = {str(lv): effort_request_fields(engine, lv) for lv in levels if lv is not None}
    config = PackConfig(unit_id=f"{prefix}/config", suite=suite, pack=pack.name, pack_path=pack.path,
                        pack_sha256=pack.sha256, task_ids=[t.id for t in pack.tasks], repetitions=repetitions,
                        efforts=[lv for lv in levels if lv is not None], knobs=knobs, engine=engine)
    if config.unit_id not in ctx.done_units:
        ctx.writer.append(config)
    units: list[tuple[str, Task, str | None, int]] = []
    for lv in levels:
        for rep in range(repetitions):
            for t in pack.tasks:
                level_part = f"{lv}/" if lv is not None else ""
                units.append((f"{prefix}/{level_part}{t.id}/r{rep}", t, lv, rep))
    todo = [u for u in units if u[0] not in ctx.done_units]
    label = f"pack {pack.name}" + (f" x {len(levels)} effort levels" if suite == "effort" else "")
    task_id = ctx.progress.task(label, len(units))
    ctx.progress.advance(task_id, len(units) - len(todo))
    sem = asyncio.Semaphore(concurrency)

    async def one(unit_id: str, t: Task, lv: str | None, rep: int) -> None:
        async with sem:
            messages = ([{"role": "system", "content": t.system}] if t.system else []) + [
                {"role": "user", "content": t.prompt}]
            body: dict[str, Any] = {
                "model": ctx.rig.model, "messages": messages,
                "temperature": pack.defaults.temperature,
                "max_tokens": max_tokens or t.max_tokens or pack.defaults.max_tokens,
                **extra_body,
                **(effort_request_fields(engine, lv)),
            }
            result = await ctx.client.stream_chat(body)
            ctx.writer.append(await grade_task(t, result, suite=suite, pack=pack.name, unit_id=unit_id,
                                               effort=lv, repetition=rep, allow_unconfined=allow_unconfined))
            ctx.progress.advance(task_id)

    try:
        # Levels run one after another so one level's load never overlaps another's timing.
        for lv in levels:
            await asyncio.gather(*(one(*u) for u in todo if u[2] == lv))
    finally:
        ctx.progress.done(task_id)


class PackSuite:
    name = "packs"

    def __init__(self, settings: PackSettings) -> None:
        self.settings = settings
        # fail before any request
        self.packs = [_select(load_pack(p), self.settings.tasks) for p in self.settings.packs]
        _check_sandbox(self.packs, self.settings.allow_unconfined)

    async def run(self, ctx: SuiteContext) -> None:
        s = self.settings
        for pack in self.packs:
            await _run_pack(ctx, pack, suite="packs", levels=[None], engine=ctx.rig.engine,
                            repetitions=s.repetitions, concurrency=s.concurrency, max_tokens=s.max_tokens,
                            extra_body=s.extra_body, allow_unconfined=s.allow_unconfined)


class EffortSweepSuite:
    name = "effort"

    def __init__(self, settings: EffortSettings) -> None:
        self.settings = settings
        self.pack = _select(load_pack(self.settings.pack), self.settings.tasks)
        _check_sandbox([self.pack], self.settings.allow_unconfined)

    async def run(self, ctx: SuiteContext) -> None:
        s = self.settings
        await _run_pack(ctx, self.pack, suite="effort", levels=list(s.levels),
                        engine=s.engine or ctx.rig.engine,
                        repetitions=s.repetitions, concurrency=s.concurrency, max_tokens=s.max_tokens,
                        extra_body=s.extra_body, allow_unconfined=s.allow_unconfined)
