"""Grading a multi-turn task: rigbench decides, never the model. A repo fix is graded by pytest on
the original tests in a pristine copy of the project into which only the changed files the task
allows (`allowed_changes` globs in task.json) are copied; conftest.py, pytest/packaging config,
sitecustomize and .pth files never are, and a changed file that refers to pytest or JUnit fails
the grade (code under test has no business touching the test runner). A root cause is graded by
comparing the submitted file and function with the known ones."""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from rigbench.records import Frozen
from rigbench.sandbox import Limits, TestOutcome, Workdir, run_pytest

if TYPE_CHECKING:
    from rigbench.suites.agent._tasks import AgentTask

__all__ = ["Grade", "grade_repo_fix", "grade_root_cause"]

_TOUCHES_RUNNER = re.compile(r"\b_?pytest\b|junit", re.IGNORECASE)


class Grade(Frozen):
    """The grade fields of a task trial's record."""

    task_kind: Literal["repo_fix", "root_cause"]
    passed: bool
    grade_detail: str
    tests_failed_before: int | None = None
    tests_passed_after: int | None = None
    tests_failed_after: int | None = None
    sandbox: dict[str, Any] = Field(default_factory=dict)


async def grade_repo_fix(task: AgentTask, work: Workdir, before: TestOutcome, *, limits: Limits,
                         allow_unconfined: bool) -> Grade:
    tests_dir = str(task.spec.get("tests_dir", "tests"))
    allowed = [str(g) for g in task.spec.get("allowed_changes", ["*"])]
    grade_copy, kept, left = work.grading_copy(task.path / "project", allowed, protected=(tests_dir,))
    try:
        runner_refs = [f for f in kept
                       if _TOUCHES_RUNNER.search((grade_copy.root / f).read_text(errors="replace"))]
        after = await asyncio.to_thread(
            run_pytest, grade_copy.root, tests_dir, limits, allow_unconfined=allow_unconfined)
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
    return Grade(
        task_kind="repo_fix",
        passed=passed,
        grade_detail=detail[:1500],
        tests_failed_before=before.failed,
        tests_passed_after=after.passed,
        tests_failed_after=after.failed,
        sandbox={
            "confinement": conf.kind,
            "confinement_note": conf.note,
            "cpu_s": limits.cpu_s,
            "memory_bytes": limits.memory_bytes,
            "wall_s": limits.wall_s,
            "file_bytes": limits.file_bytes,
            "processes": limits.processes,
            "network_isolated": conf.kind == "bwrap",
            "network": ("none (empty network namespace)" if conf.kind == "bwrap"
                        else "UNCONFINED: host network and filesystem reachable"),
            "graded_files": kept,
            "not_graded": left,
        },
    )


def grade_root_cause(task: AgentTask, answer: dict[str, Any] | None) -> Grade:
    expected = task.spec["answer"]
    ok = (
        answer is not None
        and _same_file(answer.get("file"), expected["file"])
        and _same_function(answer.get("function"), expected["function"])
    )
    detail = f"submitted {json.dumps(answer, ensure_ascii=False)[:300]}; expected {json.dumps(expected)}"
    return Grade(task_kind="root_cause", passed=ok, grade_detail=detail)


def _same_file(got: Any, want: str) -> bool:
    return isinstance(got, str) and got.strip().removeprefix("./") == want


def _same_function(got: Any, want: str) -> bool:
    return isinstance(got, str) and got.strip().removesuffix("()").split(".")[-1] == want
