"""Run a project's tests with pytest inside the sandbox and count outcomes from its JUnit XML."""

from __future__ import annotations

import secrets
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

from rigbench.sandbox._run import Limits, RunOutcome, own_dir, own_file, run_confined, sandbox_python

__all__ = ["TestOutcome", "run_pytest"]

# Only rigbench's settings: `-c` makes pytest ignore any pytest.ini/pyproject.toml/setup.cfg/tox.ini
# in the project, and `pythonpath` puts the project root on sys.path (`python -I` does not).
_INI = "[pytest]\npythonpath = .\naddopts =\n"


class TestOutcome(NamedTuple):
    passed: int
    failed: int  # failures + errors
    failed_ids: list[str]
    output_tail: str
    run: RunOutcome


def run_pytest(work: Path, tests_dir: str, limits: Limits, *, allow_unconfined: bool) -> TestOutcome:
    """pytest on `tests_dir` of `work`, with `python -I` (no user site, no PYTHON* variables)."""
    ini = ".rigbench-pytest.ini"
    own_file(work / ini, _INI)
    own_dir(work / ".tmp")
    junit = f".tmp/junit-{secrets.token_hex(8)}.xml"
    run = run_confined(
        [sandbox_python(True), "-I", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", ini,
         "--rootdir", ".", f"--junitxml={junit}", tests_dir],  # cwd: the work dir, confined or not
        work, limits, allow_unconfined=allow_unconfined, site_packages=True,
    )
    passed, failed, ids = _junit_counts(work / junit)
    return TestOutcome(passed, failed, ids, run.output[-3000:], run)


def _junit_counts(path: Path) -> tuple[int, int, list[str]]:
    if path.is_symlink() or not path.is_file():  # a symlink would be the code's forgery
        return 0, 0, []
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return 0, 0, []
    passed = failed = 0
    ids: list[str] = []
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            ids.append(f"{case.get('classname')}::{case.get('name')}")
        else:
            passed += 1
    return passed, failed, ids
