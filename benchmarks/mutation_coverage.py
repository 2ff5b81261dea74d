"""pytest plugin of benchmarks/mutation.py: which test executes which line of rigbench.

Loaded with `-p mutation_coverage` (benchmarks/ on PYTHONPATH) and told where to write by
RIGBENCH_MUTATION_MAP. coverage.py measures src/rigbench with one dynamic context per test (its node
id: setup, call and teardown together); at the end the plugin writes one JSON file:

    {"tests": [nodeid, ...], "seconds": [...], "failed": [nodeid, ...],
     "lines": {"analysis/_goodput.py": {"63": [test index, ...], ...}, ...}}

Lines run while no test was current (imports, collection) are left out: a module-level constant is
mapped by the lines that read it (benchmarks/mutation.py). Code run in a subprocess a test starts is
not seen (the CLI tests run rigbench in-process, tests/unit/cli_inproc.py).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import coverage
import pytest

_SRC = Path(__file__).resolve().parents[1] / "src" / "rigbench"
_cov = coverage.Coverage(data_file=None, include=[f"{_SRC}/*"], branch=False, config_file=False)
_tests: list[str] = []
_seconds: dict[str, float] = {}
_failed: set[str] = set()
_started = False


def pytest_configure(config: pytest.Config) -> None:
    global _started
    if not _started:
        _cov.start()
        _started = True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _cov.switch_context(item.nodeid)
    _tests.append(item.nodeid)
    t0 = time.perf_counter()
    yield
    _seconds[item.nodeid] = time.perf_counter() - t0
    _cov.switch_context("")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _failed.add(report.nodeid)


def pytest_unconfigure(config: pytest.Config) -> None:
    out = os.environ.get("RIGBENCH_MUTATION_MAP")
    if not _started or not out:
        return
    _cov.stop()
    data = _cov.get_data()
    index = {t: i for i, t in enumerate(_tests)}
    lines: dict[str, dict[str, list[int]]] = {}
    for path in data.measured_files():
        rel = Path(path).resolve().relative_to(_SRC).as_posix()
        by_line: dict[str, list[int]] = {}
        for line, contexts in data.contexts_by_lineno(path).items():
            ids = sorted(index[c] for c in contexts if c in index)
            if ids:
                by_line[str(line)] = ids
        if by_line:
            lines[rel] = by_line
    result: dict[str, Any] = {"tests": _tests, "seconds": [round(_seconds.get(t, 0.0), 4) for t in _tests],
                              "failed": sorted(_failed), "lines": lines}
    Path(out).write_text(json.dumps(result))
