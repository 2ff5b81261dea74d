"""The kept record of a test session (tests/ci_record.py, tests/ci_index.py; .ci/run turns it on): a
pytest session over a few tests of each outcome writes every test's outcome and duration, the
failures with their message, the host's figures and one index line per session; pytest's own
closing line stays the last line of the output (the CI reads it). .ci/run's trap adds a line for a
run that ended before pytest wrote a record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.ci_index import INDEX_COLUMNS
from tests.ci_record import host_summary

REPO = Path(__file__).resolve().parents[2]
CONFTEST = """
import os
from tests.ci_record import RECORD_ENV, plugin_from_env

def pytest_configure(config):
    record = plugin_from_env(config.rootpath)
    os.environ.pop(RECORD_ENV, None)
    if record is not None:
        config.pluginmanager.register(record, "rigbench-ci-record")
"""
TESTS = """
import time, pytest

def test_passes():
    time.sleep(0.3)

def test_fails():
    assert 1 + 1 == 3, "arithmetic is off"

def test_skips():
    pytest.skip("not here")

@pytest.mark.xfail(reason="known")
def test_xfails():
    assert False

def test_nested_pytest_keeps_no_record_of_its_own(tmp_path):
    import os
    assert "RIGBENCH_CI_RECORD_DIR" not in os.environ
"""


def _session(tmp: Path, record: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    (tmp / "conftest.py").write_text(CONFTEST)
    (tmp / "test_things.py").write_text(TESTS)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'src'}", "RIGBENCH_CI_RECORD_DIR": str(record),
           **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_things.py"],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


def test_a_session_keeps_each_tests_outcome_duration_failure_and_the_host(tmp_path: Path) -> None:
    root = tmp_path / "ci-runs"
    p = _session(tmp_path, root / "run-1", {"RIGBENCH_CI_T0": "1000", "RIGBENCH_CI_T_README": "1040"})
    assert p.returncode == 1, p.stdout
    rec = json.loads((root / "run-1" / "summary.json").read_text())
    tests = rec["tests"]
    assert {k.split("::")[1]: v["outcome"] for k, v in tests.items()} == {
        "test_passes": "passed", "test_fails": "failed", "test_skips": "skipped", "test_xfails": "xfailed",
        "test_nested_pytest_keeps_no_record_of_its_own": "passed"}
    assert rec["counts"] == {"passed": 2, "failed": 1, "skipped": 1, "xfailed": 1}
    assert tests["test_things.py::test_passes"]["duration_s"] >= 0.3
    assert rec["slowest"][0]["test"] == "test_things.py::test_passes"
    assert rec["failures"] == {"test_things.py::test_fails": "AssertionError: arithmetic is off"}
    assert rec["exit_status"] == 1 and rec["before_readme_command_s"] == 40.0
    host = rec["host"]
    assert host["cpus"] == os.cpu_count() and host["samples"] >= 1 and host["load1_mean"] is not None
    # the summary is printed before pytest's own closing line, which stays last
    out = p.stdout.rstrip().splitlines()
    assert "kept record of this session" in p.stdout and "failed: test_things.py::test_fails" in p.stdout
    assert out[-1].startswith("1 failed, 2 passed, 1 skipped, 1 xfailed"), out[-3:]
    # a second session adds a line to the index beside the records
    _session(tmp_path, root / "run-2")
    lines = (root / "index.tsv").read_text().splitlines()
    assert lines[0].split("\t") == INDEX_COLUMNS and len(lines) == 3
    row = dict(zip(INDEX_COLUMNS, lines[2].split("\t"), strict=True))
    assert (row["exit"], row["passed"], row["failed"], row["skipped"], row["xfailed"]) == ("1", "2", "1", "1", "1")
    assert row["record_dir"] == str(root / "run-2")


def test_a_run_that_ended_before_pytest_gets_an_index_line_with_its_status(tmp_path: Path) -> None:
    record = tmp_path / "ci-runs" / "run-x"
    p = subprocess.run([sys.executable, str(REPO / "tests" / "ci_index.py"), str(record), "2"], capture_output=True,
                       text=True, timeout=60, cwd=REPO)
    assert p.returncode == 0 and "no test record (exit 2" in p.stdout, p.stdout + p.stderr
    row = dict(zip(INDEX_COLUMNS, (tmp_path / "ci-runs" / "index.tsv").read_text().splitlines()[1].split("\t"),
                   strict=True))
    assert row["exit"] == "2" and "before pytest wrote a record" in row["note"]
    # and .ci/run calls it on exit, with its own status
    ci = (REPO / ".ci" / "run").read_text()
    assert 'trap on_exit EXIT' in ci and 'python3 tests/ci_index.py "$RIGBENCH_CI_RECORD_DIR" "$rc"' in ci


def test_steal_and_busy_cores_come_from_the_cpu_lines_between_samples() -> None:
    # /proc/stat cpu: user nice system idle iowait irq softirq steal; 2 CPUs, 10 s apart = 2,000 jiffies
    a = {"t": 0, "load1": 1.0, "running": 2, "cpu": [0, 0, 0, 0, 0, 0, 0, 0]}
    b = {"t": 10, "load1": 3.0, "running": 4, "cpu": [900, 100, 200, 500, 100, 0, 0, 200]}
    h = host_summary([a, b], cpus=2)
    assert h["steal_cores_mean"] == 0.2 and h["steal_cores_max"] == 0.2  # 200 of 2,000 jiffies, x 2 CPUs
    assert h["busy_cores_mean"] == 1.4  # all but idle and iowait: 1,400 of 2,000, x 2
    assert (h["load1_mean"], h["load1_max"], h["run_queue_max"]) == (2.0, 3.0, 4)


def test_the_record_keeps_the_exit_status_ci_ends_with(tmp_path: Path) -> None:
    """Under CI=true the skip check (tests/skip_check.py) turns an unlisted skip into a failed session
    as pytest finishes; the record is written after it, so its exit status and index line say 1, as
    CI does, not the 0 pytest had before the check."""
    (tmp_path / "conftest.py").write_text("from tests.skip_check import (pytest_collectreport, pytest_runtest_logreport,"
                                          " pytest_runtest_setup, pytest_sessionfinish, pytest_terminal_summary)\n"
                                          + CONFTEST)
    (tmp_path / "test_skip.py").write_text("import pytest\n\ndef test_skips():\n    pytest.skip('not here')\n")
    (tmp_path / "allowed.txt").write_text("")
    record = tmp_path / "ci-runs" / "run-ci"
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'src'}", "RIGBENCH_CI_RECORD_DIR": str(record),
           "CI": "true", "RIGBENCH_ALLOWED_SKIPS": str(tmp_path / "allowed.txt")}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_skip.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "skips not allowed under CI" in p.stdout, p.stdout
    rec = json.loads((record / "summary.json").read_text())
    assert rec["exit_status"] == 1 and rec["counts"] == {"skipped": 1} and rec["ci"] == "true"
    row = dict(zip(INDEX_COLUMNS, (record.parent / "index.tsv").read_text().splitlines()[1].split("\t"), strict=True))
    assert row["exit"] == "1"
