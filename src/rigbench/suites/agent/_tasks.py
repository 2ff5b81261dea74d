"""Multi-turn agent tasks: fix a repository until its tests pass, and find a root cause.

A trial is three parts: the workspace the model's tools act on (`_workspace.py`: a sandboxed
copy of the project, or in-memory files), the driver that holds the conversation (`_driver.py`),
and the grader (`_grading.py`), which decides success itself (pytest on the original tests, or
the submitted answer against the known one), never from what the model claims. Every pytest run,
the model's own `run_tests` included, is sandboxed (rigbench.sandbox). A trial stops when the
model answers without a call, at `max_turns`, or when it repeats the same calls `repeat_limit`
turns in a row.
"""

from __future__ import annotations

import asyncio
import json

from rigbench.records import TaskTrialRecord
from rigbench.sandbox import Limits, require_confinement
from rigbench.suites._context import SuiteContext
from rigbench.suites.agent._driver import converse
from rigbench.suites.agent._grading import grade_repo_fix, grade_root_cause
from rigbench.suites.agent._settings import AgentSettings
from rigbench.suites.agent._task import AgentTask, load_task, shipped_tasks
from rigbench.suites.agent._workspace import Workspace

__all__ = ["RepoTaskSuite"]

_SYSTEM = (
    "You are a software agent. You can only act through the tools you are given; call them to "
    "inspect and change files. Do not ask the user questions."
)


class RepoTaskSuite:
    """The shipped agent tasks (`cart_bugs`: repo fix, `cart_root_cause`: pseudo-filesystem).

    Settings: `agent_tasks` (names or paths; default all shipped), `task_trials` (k), `max_turns`,
    `repeat_limit`, `task_max_tokens`, `allow_unconfined`.
    """

    name = "agent_tasks"

    def __init__(self, settings: AgentSettings, *, limits: Limits | None = None) -> None:
        self.settings = settings
        self.limits = limits or Limits()
        self.allow_unconfined = self.settings.allow_unconfined

    async def run(self, ctx: SuiteContext) -> None:
        s = self.settings
        tasks = [load_task(n) for n in s.agent_tasks or shipped_tasks()]
        if any(t.kind == "repo_fix" for t in tasks):
            require_confinement(self.allow_unconfined)  # before any request
        trials = s.task_trials
        todo = [
            (t, k) for t in tasks for k in range(trials) if f"agent/task/{t.name}/t{k}" not in ctx.done_units
        ]
        bar = ctx.progress.task("agent: multi-turn tasks", len(todo))
        for task, k in todo:
            ctx.writer.append(await self.trial(ctx, task, k))
            ctx.progress.advance(bar)
        ctx.progress.done(bar)

    async def trial(self, ctx: SuiteContext, task: AgentTask, k: int) -> TaskTrialRecord:
        """One trial: a fresh workspace, the conversation, then rigbench's own grade."""
        ws = Workspace(task, self.limits, allow_unconfined=self.allow_unconfined)
        try:
            before = await asyncio.to_thread(ws.run_tests) if ws.sandbox else None
            conv = await converse(
                ctx,
                [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": task.prompt}],
                ws.tools,
                ws.call,
                seed=ctx.seed + k,
                max_turns=self.settings.max_turns,
                repeat_limit=self.settings.repeat_limit,
                max_tokens=self.settings.task_max_tokens,
            )
            blob = ctx.writer.blob(f"transcript-{task.name}-t{k}.json", json.dumps(conv.messages, ensure_ascii=False))
            if ws.sandbox is not None and before is not None:
                grade = await grade_repo_fix(task, ws.sandbox, before, limits=self.limits,
                                             allow_unconfined=self.allow_unconfined)
            else:
                grade = grade_root_cause(task, conv.answer)
            return TaskTrialRecord(
                unit_id=f"agent/task/{task.name}/t{k}",
                task=task.name,
                trial=k,
                stop_reason=conv.stop,
                turns=conv.turns,
                wall_s=conv.wall_s,
                transcript_blob=blob,
                refused_paths=ws.refused,
                **grade.model_dump(),
            )
        finally:
            ws.cleanup()
