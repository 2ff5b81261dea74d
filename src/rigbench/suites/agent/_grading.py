"""Grading a multi-turn task: rigbench decides, never the model. A repo fix is graded by pytest on
the original tests in a pristine copy of the project into which only the changed files the task
allows (`allowed_changes` globs in task.json) are copied; conftest.py, pytest/packaging config,
sitecustomize and .pth files never are. The verdict comes from the signed per-test stream of
rigbench's grading launcher (`rigbench.sandbox.grade_pytest`), checked against the task's own list
of test ids (`test_ids` in task.json), never from a file the code under test could write; the
project runs in a process of its own that the tests reach through plain-data proxies. A changed
file that refers to pytest or JUnit fails the grade; when a task keeps its project inside the test
process (`project_in_test_process`), so does one that names the interpreter's own machinery
(frames, gc, code objects, import hooks, exit hooks, signals). A root cause is graded by comparing
the submitted file and function with the known ones."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from typing import Any, Literal

from pydantic import Field

from rigbench.records import Frozen
from rigbench.sandbox import Limits, TestOutcome, Workdir, grade_pytest
from rigbench.suites.agent._task import AgentTask

__all__ = ["Grade", "grade_repo_fix", "grade_root_cause", "not_passed_summary"]

# `pytest` as a word or the start of one: the module, its hooks (pytest_runtest_makereport) and its
# environment (PYTEST_CURRENT_TEST names the running test: a "fix" in the test process read it to
# answer the one failing test).
_TOUCHES_RUNNER = re.compile(r"\b_?pytest|junit", re.IGNORECASE)
# The spellings of reaching into the test process itself; a plain shopping-cart fix needs none of
# them. Obfuscated spellings are not caught here: the signed stream and the launcher's checks are
# the real defence, this only names the obvious attempt in the record.
_TOUCHES_INTERPRETER = re.compile(
    r"\b(atexit|signal|gc|ctypes|inspect|importlib|builtins|__builtins__|sys\.modules|meta_path|path_hooks"
    r"|_getframe|f_back|f_globals|f_locals|__code__|__closure__|cell_contents|settrace|setprofile"
    r"|_exit|fork|pluggy|_current_frames)\b|/proc/")


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
        # The project runs in a process of its own unless the task says its tests need it inside
        # the test process; only then can its code reach the process that writes the verdict.
        isolate = not task.spec.get("project_in_test_process", False)
        runner_refs, interp_refs = [], []
        for f in kept:
            text = (grade_copy.root / f).read_text(errors="replace")
            if _TOUCHES_RUNNER.search(text):
                runner_refs.append(f)
            if not isolate and (m := _TOUCHES_INTERPRETER.search(text)):
                interp_refs.append(f"{f} ({m.group(0)})")
        ids = task.spec.get("test_ids")
        after = await asyncio.to_thread(
            grade_pytest, grade_copy.root, tests_dir, [str(i) for i in ids] if ids else None, limits,
            allow_unconfined=allow_unconfined, isolate=isolate)
    finally:
        grade_copy.cleanup()
    total = len(ids) if ids else int(task.spec.get("expected_total", 0)) or len(after.outcomes)
    passed = after.all_passed and after.passed == total and not runner_refs and not interp_refs
    not_passed = not_passed_summary(after.outcomes)
    detail = (
        f"pytest on the original tests with {len(kept)} changed file(s) copied into a pristine project: "
        f"{after.passed} passed, {after.failed} not passed (expected {total} passing)"
        + (f": {not_passed}" if not_passed else "")
        + (f"; result stream rejected: {' | '.join(after.problems[:4])}" if after.problems else "")
        + (f"; failed: {', '.join(runner_refs)} refer(s) to pytest/JUnit" if runner_refs else "")
        + (f"; failed: {', '.join(interp_refs)} reach(es) into the interpreter" if interp_refs else "")
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
            "grading": ("signed per-test stream from rigbench's launcher (read-only), checked against the task's "
                        "test ids; " + ("the project in a process of its own, reached through plain-data proxies"
                                        if isolate else "the project inside the test process (task setting)")),
            "stream_problems": after.problems[:20],
            "test_outcomes": after.outcomes,
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


def not_passed_summary(outcomes: dict[str, str], ids_shown: int = 6) -> str:
    """How the tests that did not pass ended, counted by outcome, then the first ids:
    "1 failed, 2 skipped: a (failed), b (skipped), c (skipped)"; "" when all passed."""
    bad = sorted(((o, i) for i, o in outcomes.items() if o != "passed"), key=lambda x: x[0])
    if not bad:
        return ""
    counts = Counter(o for o, _ in bad)
    return (", ".join(f"{n} {o}" for o, n in sorted(counts.items())) + ": "
            + ", ".join(f"{i} ({o})" for o, i in bad[:ids_shown]))


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
