"""Under CI=true a missing need fails and an unlisted skip fails the run; elsewhere both skip.

Each case runs pytest in a child on a small test directory whose conftest takes rigbench's own
hooks (tests/skip_check.py), as tests/conftest.py does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.skip_check import DEFAULT_LIST, allowed_skips, unexpected_skips

REPO = Path(__file__).resolve().parents[2]
CONFTEST = "from tests.skip_check import *  # noqa\n"
TESTS = '''
import pytest
from tests.needs import requires

def test_runs():
    pass

def test_skips_itself():
    pytest.skip("no frobnicator on this machine")

@requires(False, "bubblewrap is not installed")
def test_needs_bwrap():
    pass
'''


def _pytest(tmp: Path, tests: str, *, ci: bool, allowed: str = "") -> subprocess.CompletedProcess[str]:
    (tmp / "conftest.py").write_text(CONFTEST)
    (tmp / "test_things.py").write_text(tests)
    (tmp / "allowed.txt").write_text(allowed)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PYTHONPATH=f"{REPO}{os.pathsep}{REPO / 'src'}", RIGBENCH_ALLOWED_SKIPS=str(tmp / "allowed.txt"),
               **({"CI": "true"} if ci else {}))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "test_things.py"],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


def test_outside_ci_a_missing_need_and_a_skip_are_skips_with_their_reason(tmp_path: Path) -> None:
    p = _pytest(tmp_path, TESTS, ci=False)
    assert p.returncode == 0, p.stdout
    assert "1 passed, 2 skipped" in p.stdout
    assert "bubblewrap is not installed" in p.stdout and "no frobnicator" in p.stdout


def test_under_ci_a_missing_need_fails_and_an_unlisted_skip_fails_the_run(tmp_path: Path) -> None:
    p = _pytest(tmp_path, TESTS, ci=True)
    assert p.returncode == 1, p.stdout
    assert "bubblewrap is not installed (CI=true" in p.stdout  # the need: an error at setup
    assert "skips not allowed under CI" in p.stdout and "test_things.py::test_skips_itself" in p.stdout


def test_under_ci_a_listed_skip_passes(tmp_path: Path) -> None:
    tests = TESTS.replace('@requires(False, "bubblewrap is not installed")', '@requires(True, "never shown")')
    p = _pytest(tmp_path, tests, ci=True, allowed="test_things.py::test_skips_itself  # frobnicators are rare\n")
    assert p.returncode == 0, p.stdout
    assert "2 passed, 1 skipped" in p.stdout and "not allowed" not in p.stdout


def test_under_ci_a_module_that_would_skip_itself_is_an_error(tmp_path: Path) -> None:
    tests = "from tests.needs import missing_module\nmissing_module('the Ray extra is not installed')\n" \
            "def test_never():\n    pass\n"
    p = _pytest(tmp_path, tests, ci=True)
    assert p.returncode != 0 and "the Ray extra is not installed (CI=true" in p.stdout, p.stdout
    p = _pytest(tmp_path, tests, ci=False)
    assert p.returncode in (0, 5) and "1 skipped" in p.stdout, p.stdout


XFAILS = '''
import pytest

def test_runs():
    pass

@pytest.mark.xfail(reason="the frobnicator is broken")
def test_expected_to_fail():
    assert False

@pytest.mark.xfail(reason="the frobnicator may be broken")
def test_expected_to_fail_but_passes():
    pass

def test_gives_up_at_run_time():
    pytest.xfail("no frobnicator answered")
'''


def test_under_ci_an_xfail_and_an_xpass_are_skips_that_must_be_listed(tmp_path: Path) -> None:
    """An xfail judged nothing (the test's failure was expected, whatever failed), and an xpass (non-strict)
    neither: under CI both fail the run unless the list names them, as a skip does."""
    p = _pytest(tmp_path, XFAILS, ci=True)
    assert p.returncode == 1, p.stdout
    said = p.stdout[p.stdout.index("skips not allowed under CI"):]
    assert "3 test(s) skipped" in said, said
    assert "test_things.py::test_expected_to_fail: xfail: the frobnicator is broken" in said, said
    assert "test_things.py::test_expected_to_fail_but_passes: xpass (marked xfail, passed): the frobnicator may " \
           "be broken" in said, said
    assert "test_things.py::test_gives_up_at_run_time: xfail: no frobnicator answered" in said, said
    assert "test_things.py::test_runs" not in said
    listed = "".join(f"test_things.py::{t}  # accepted\n" for t in ("test_expected_to_fail",
                                                                    "test_expected_to_fail_but_passes",
                                                                    "test_gives_up_at_run_time"))
    p = _pytest(tmp_path, XFAILS, ci=True, allowed=listed)  # control: listed, they pass the run
    assert p.returncode == 0 and "not allowed" not in p.stdout, p.stdout
    p = _pytest(tmp_path, XFAILS, ci=False)  # control: outside CI an xfail is what pytest says it is
    assert p.returncode == 0 and "1 passed, 2 xfailed, 1 xpassed" in p.stdout, p.stdout


def test_the_shipped_list_parses_and_the_comparison_is_by_test_id() -> None:
    listed = allowed_skips(DEFAULT_LIST)
    assert all("::" in t or t.endswith(".py") for t in listed), listed
    got = unexpected_skips({"a.py::t1": "why", "a.py::t2": "why"}, {"a.py::t1"})
    assert got == ["a.py::t2: why"]


@pytest.mark.parametrize("value", ["true", "1", "TRUE"])
def test_ci_is_recognised(value: str, tmp_path: Path) -> None:
    env = {**os.environ, "CI": value, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", "from tests.needs import IN_CI; print(IN_CI)"],
                         env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == "True", out.stderr
