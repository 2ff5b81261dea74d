"""Under CI=true, fail the session when a test skipped that tests/allowed_skips.txt does not list.

A skip hides a test that did not run; in CI, where everything the tests need is installed, every
skip must be one the project decided to accept and wrote down with its reason. An xfail is a skip
too (its failure judged nothing), and so is an xpass (a non-strict xfail that passed: nothing says
whether it should have). The hooks here are
imported by tests/conftest.py. `RIGBENCH_ALLOWED_SKIPS` names another list (this module's own
tests use it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.needs import IN_CI, missing

__all__ = ["allowed_skips", "pytest_collectreport", "pytest_runtest_logreport", "pytest_runtest_setup", "pytest_sessionfinish",
           "pytest_terminal_summary", "unexpected_skips"]

DEFAULT_LIST = Path(__file__).with_name("allowed_skips.txt")
_skipped: dict[str, str] = {}
_refused: list[str] = []


def allowed_skips(path: Path) -> set[str]:
    """Test ids of the list: one a line, `#` starts a comment (the reason)."""
    if not path.exists():
        return set()
    return {line.split("#", 1)[0].strip() for line in path.read_text().splitlines()} - {""}


def unexpected_skips(skipped: dict[str, str], allowed: set[str]) -> list[str]:
    return [f"{nodeid}: {why}" for nodeid, why in sorted(skipped.items()) if nodeid not in allowed]


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("requires"):
        if not mark.kwargs.get("ok", False):
            missing(str(mark.kwargs.get("reason", "a requirement of this test is missing")))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:  # a module that skipped itself as a whole
        longrepr: Any = report.longrepr
        why = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        _skipped[report.nodeid] = why.removeprefix("Skipped: ")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    xfail = getattr(report, "wasxfail", None)
    if xfail is not None and (report.skipped or report.passed):
        what = "xfail" if report.skipped else "xpass (marked xfail, passed)"
        reason = str(xfail).removeprefix("reason: ")
        _skipped[report.nodeid] = f"{what}: {reason}" if reason else what
    elif report.skipped:
        longrepr: Any = report.longrepr
        why = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        _skipped[report.nodeid] = why.removeprefix("Skipped: ")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not IN_CI:
        return
    listed = Path(os.environ.get("RIGBENCH_ALLOWED_SKIPS") or DEFAULT_LIST)
    _refused[:] = unexpected_skips(_skipped, allowed_skips(listed))
    if _refused and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _refused:
        listed = os.environ.get("RIGBENCH_ALLOWED_SKIPS") or DEFAULT_LIST
        terminalreporter.section("skips not allowed under CI", sep="=", red=True)
        terminalreporter.line(f"{len(_refused)} test(s) skipped that {listed} does not list; under CI=true a skip "
                              "is a failure unless the list names it with its reason:")
        for line in _refused:
            terminalreporter.line(f"  {line}")
