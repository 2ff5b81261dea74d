"""Multi-turn agent tasks: fix a repository until its tests pass, and find a root cause.

Success is decided by rigbench (pytest run by us on the original tests, or the submitted answer
compared with the known one), never by what the model claims. A repo fix is graded in a pristine
copy of the project into which only the changed files the task allows (`allowed_changes` globs in
task.json) are copied; conftest.py, pytest/packaging config, sitecustomize and .pth files never
are, and a changed file that refers to pytest or JUnit fails the grade (code under test has no
business touching the test runner). Every run, the model's own `run_tests` included, is
sandboxed (rigbench.sandbox). A trial stops when the model answers without a call, at
`max_turns`, or when it repeats the same calls `repeat_limit` turns in a row.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from rigbench.errors import UsageError
from rigbench.records import TaskStopReason, TaskTrialRecord, TurnObservation
from rigbench.sandbox import Limits, PathRefused, TestOutcome, Workdir, require_confinement, run_pytest
from rigbench.suites._context import SuiteContext
from rigbench.suites.agent._exchange import canonical_calls, parse_arguments, send
from rigbench.suites.agent._toolcalls import tool

__all__ = ["AgentTask", "RepoTaskSuite", "load_task", "shipped_tasks"]

_TOUCHES_RUNNER = re.compile(r"\b_?pytest\b|junit", re.IGNORECASE)

_SYSTEM = (
    "You are a software agent. You can only act through the tools you are given; call them to "
    "inspect and change files. Do not ask the user questions."
)

READ = tool("read_file", "Read a text file of the project.", {"path": {"type": "string"}}, ["path"])
WRITE = tool(
    "write_file",
    "Replace the whole content of a file of the project.",
    {"path": {"type": "string"}, "content": {"type": "string"}},
    ["path", "content"],
)
LIST = tool(
    "list_files",
    "List the files under a directory of the project ('.' for all).",
    {"path": {"type": "string"}},
    [],
)
RUN_TESTS = tool("run_tests", "Run the project's test suite with pytest and return the summary.", {}, [])
REPORT = tool(
    "report_root_cause",
    "Report the root cause of the failure. Call once, when sure.",
    {"file": {"type": "string"}, "function": {"type": "string"}, "explanation": {"type": "string"}},
    ["file", "function", "explanation"],
)


@dataclass(frozen=True)
class AgentTask:
    name: str
    kind: str  # "repo_fix" | "root_cause"
    prompt: str
    path: Path
    spec: dict[str, Any]


def _tasks_root() -> Path:
    return Path(str(files("rigbench") / "data" / "agent_tasks"))


def shipped_tasks() -> list[str]:
    return sorted(p.name for p in _tasks_root().iterdir() if (p / "task.json").exists())


def load_task(name_or_path: str) -> AgentTask:
    p = Path(name_or_path)
    d = p if (p / "task.json").exists() else _tasks_root() / name_or_path
    if not (d / "task.json").exists():
        raise UsageError(
            f"no agent task {name_or_path!r}: expected a task.json there. "
            f"Shipped tasks: {', '.join(shipped_tasks())}."
        )
    spec = json.loads((d / "task.json").read_text())
    return AgentTask(spec["name"], spec["kind"], spec["prompt"], d, spec)


class _PseudoFS:
    """The root-cause task's in-memory files; same path rules as the on-disk sandbox."""

    def __init__(self, files_: dict[str, str]) -> None:
        self.files = files_
        self.refused = 0

    def _key(self, rel: str) -> str:
        if not isinstance(rel, str) or rel.startswith(("/", "\\", "~")) or ".." in Path(rel).parts:
            self.refused += 1
            raise PathRefused(f"path {rel!r} refused: use a relative path inside the repository")
        return str(Path(rel)) if rel not in (".", "") else "."

    def read_file(self, rel: str) -> str:
        key = self._key(rel)
        if key not in self.files:
            raise FileNotFoundError(f"no such file: {rel}")
        return self.files[key]

    def list_files(self, rel: str = ".") -> list[str]:
        key = self._key(rel or ".")
        return sorted(f for f in self.files if key == "." or f.startswith(key.rstrip("/") + "/"))


def _tokens(usage: dict[str, Any] | None, key: str) -> int | None:
    v = (usage or {}).get(key)
    return v if isinstance(v, int) else None


class RepoTaskSuite:
    """The shipped agent tasks (`cart_bugs`: repo fix, `cart_root_cause`: pseudo-filesystem).

    Settings: `agent_tasks` (names or paths; default all shipped), `task_trials` (k, default 3),
    `max_turns` (default 20), `repeat_limit` (default 3), `task_max_tokens` (default 1024).
    """

    name = "agent_tasks"

    def __init__(
        self,
        *,
        trials: int = 3,
        max_turns: int = 20,
        repeat_limit: int = 3,
        max_tokens: int = 1024,
        limits: Limits | None = None,
    ) -> None:
        self.trials = trials
        self.max_turns = max_turns
        self.repeat_limit = repeat_limit
        self.max_tokens = max_tokens
        self.limits = limits or Limits()
        self.allow_unconfined = False

    async def run(self, ctx: SuiteContext) -> None:
        s = ctx.settings
        names = s.get("agent_tasks") or shipped_tasks()
        tasks = [load_task(n) for n in names]
        self.allow_unconfined = bool(s.get("allow_unconfined", False))
        if any(t.kind == "repo_fix" for t in tasks):
            require_confinement(self.allow_unconfined)  # before any request
        trials = int(s.get("task_trials", self.trials))
        todo = [
            (t, k) for t in tasks for k in range(trials) if f"agent/task/{t.name}/t{k}" not in ctx.done_units
        ]
        bar = ctx.progress.task("agent: multi-turn tasks", len(todo))
        for task, k in todo:
            ctx.writer.append(await self.trial(ctx, task, k))
            ctx.progress.advance(bar)
        ctx.progress.done(bar)

    async def trial(self, ctx: SuiteContext, task: AgentTask, k: int) -> TaskTrialRecord:
        max_turns = int(ctx.settings.get("max_turns", self.max_turns))
        repeat_limit = int(ctx.settings.get("repeat_limit", self.repeat_limit))
        max_tokens = int(ctx.settings.get("task_max_tokens", self.max_tokens))
        sandbox: Workdir | None = None
        fs: _PseudoFS | Workdir
        if task.kind == "repo_fix":
            sandbox = Workdir.copy_of(task.path / "project")
            fs = sandbox
            tools = [READ, WRITE, LIST, RUN_TESTS]
        else:
            fs = _PseudoFS(dict(task.spec["files"]))
            tools = [READ, LIST, REPORT]
        try:
            before = await asyncio.to_thread(self._pytest, sandbox, task) if sandbox else None
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": _SYSTEM},
                {"role": "user", "content": task.prompt},
            ]
            turns: list[TurnObservation] = []
            stop: TaskStopReason = "max_turns"
            answer: dict[str, Any] | None = None
            last_sig: list[tuple[str, str]] | None = None
            repeats = 0
            t0 = time.perf_counter()
            for turn in range(max_turns):
                body = {
                    "model": ctx.rig.model,
                    "messages": messages,
                    "tools": tools,
                    "tool_choice": "auto",
                    "temperature": 0.0,
                    "seed": ctx.seed + k,
                    "max_tokens": max_tokens,
                }
                reply = await send(ctx.client, ctx.writer, body)
                ex = reply.exchange
                calls = [dict(c, id=c.get("id") or f"call_{turn}_{i}") for i, c in enumerate(ex.tool_calls)]
                turns.append(
                    TurnObservation(
                        tool_calls=len(calls),
                        prompt_tokens=_tokens(ex.usage, "prompt_tokens"),
                        completion_tokens=_tokens(ex.usage, "completion_tokens"),
                        elapsed_s=ex.elapsed_s,
                        finish_reason=ex.finish_reason,
                        invalid_arguments=sum(parse_arguments(c) is None for c in calls),
                    )
                )
                if ex.error:
                    stop = "request_error"
                    messages.append({"role": "rigbench", "error": ex.error})
                    break
                msg = dict(reply.message)
                if calls:
                    msg["tool_calls"] = calls
                messages.append(msg)
                if not calls:
                    stop = "model_stopped"
                    break
                for c in calls:
                    result, submitted = await self._dispatch(fs, sandbox, c, task)
                    messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
                    if submitted is not None:
                        answer = submitted
                if answer is not None:
                    stop = "answer_submitted"
                    break
                sig = canonical_calls(calls)
                repeats = repeats + 1 if sig == last_sig else 0
                last_sig = sig
                if repeats >= repeat_limit - 1:
                    stop = "repeated_call"
                    break
            wall = time.perf_counter() - t0
            blob = ctx.writer.blob(
                f"transcript-{task.name}-t{k}.json", json.dumps(messages, ensure_ascii=False)
            )
            common: dict[str, Any] = dict(
                unit_id=f"agent/task/{task.name}/t{k}",
                task=task.name,
                trial=k,
                stop_reason=stop,
                turns=turns,
                wall_s=wall,
                transcript_blob=blob,
                refused_paths=fs.refused,
            )
            if sandbox is not None and before is not None:
                return await self._grade_repo_fix(task, sandbox, before, common)
            expected = task.spec["answer"]
            ok = (
                answer is not None
                and _same_file(answer.get("file"), expected["file"])
                and _same_function(answer.get("function"), expected["function"])
            )
            detail = (
                f"submitted {json.dumps(answer, ensure_ascii=False)[:300]}; expected {json.dumps(expected)}"
            )
            return TaskTrialRecord(task_kind="root_cause", passed=ok, grade_detail=detail, **common)
        finally:
            if sandbox is not None:
                sandbox.cleanup()

    async def _dispatch(
        self, fs: _PseudoFS | Workdir, sandbox: Workdir | None, call: dict[str, Any], task: AgentTask
    ) -> tuple[str, dict[str, Any] | None]:
        """Run one tool call; the model's mistakes come back to it as an error string."""
        name = (call.get("function") or {}).get("name")
        args = parse_arguments(call)
        if args is None:
            return "error: arguments are not a JSON object", None
        try:
            if name == "read_file":
                return fs.read_file(str(args.get("path", ""))), None
            if name == "list_files":
                return "\n".join(fs.list_files(str(args.get("path") or "."))) or "(no files)", None
            if name == "write_file" and sandbox is not None:
                return sandbox.write_file(str(args.get("path", "")), str(args.get("content", ""))), None
            if name == "run_tests" and sandbox is not None:
                out = await asyncio.to_thread(self._pytest, sandbox, task)
                return f"{out.passed} passed, {out.failed} failed\n{out.output_tail[-2000:]}", None
            if name == "report_root_cause" and isinstance(fs, _PseudoFS):
                return "recorded", args
        except (PathRefused, FileNotFoundError, ValueError, OSError) as e:
            return f"error: {e}", None
        return f"error: unknown tool {name!r}", None

    def _pytest(self, work: Workdir, task: AgentTask) -> TestOutcome:
        tests = str(task.spec.get("tests_dir", "tests"))
        return run_pytest(work.root, tests, self.limits, allow_unconfined=self.allow_unconfined)

    async def _grade_repo_fix(self, task: AgentTask, work: Workdir, before: TestOutcome,
                              common: dict[str, Any]) -> TaskTrialRecord:
        tests_dir = str(task.spec.get("tests_dir", "tests"))
        allowed = [str(g) for g in task.spec.get("allowed_changes", ["*"])]
        grade_copy, kept, left = work.grading_copy(task.path / "project", allowed, protected=(tests_dir,))
        try:
            runner_refs = [f for f in kept
                           if _TOUCHES_RUNNER.search((grade_copy.root / f).read_text(errors="replace"))]
            after = await asyncio.to_thread(
                run_pytest, grade_copy.root, tests_dir, self.limits, allow_unconfined=self.allow_unconfined)
        finally:
            grade_copy.cleanup()
        total = int(task.spec.get("expected_total", 0)) or (after.passed + after.failed)
        passed = after.failed == 0 and after.passed == total and not runner_refs
        detail = (
            f"pytest on the original tests with {len(kept)} changed file(s) copied into a pristine project: "
            f"{after.passed} passed, {after.failed} failed (expected {total} passing)"
            + ("; timed out" if after.run.timed_out else "")
            + (f"; failed: {', '.join(runner_refs)} refer(s) to pytest/JUnit" if runner_refs else "")
            + (f"; not graded: {'; '.join(left)}" if left else "")
        )
        conf = after.run.confinement
        return TaskTrialRecord(
            task_kind="repo_fix",
            passed=passed,
            grade_detail=detail[:1500],
            tests_failed_before=before.failed,
            tests_passed_after=after.passed,
            tests_failed_after=after.failed,
            sandbox={
                "confinement": conf.kind,
                "confinement_note": conf.note,
                "cpu_s": self.limits.cpu_s,
                "memory_bytes": self.limits.memory_bytes,
                "wall_s": self.limits.wall_s,
                "file_bytes": self.limits.file_bytes,
                "processes": self.limits.processes,
                "network_isolated": conf.kind == "bwrap",
                "network": ("none (empty network namespace)" if conf.kind == "bwrap"
                            else "UNCONFINED: host network and filesystem reachable"),
                "graded_files": kept,
                "not_graded": left,
            },
            **common,
        )


def _same_file(got: Any, want: str) -> bool:
    return isinstance(got, str) and got.strip().removeprefix("./") == want


def _same_function(got: Any, want: str) -> bool:
    return isinstance(got, str) and got.strip().removesuffix("()").split(".")[-1] == want
