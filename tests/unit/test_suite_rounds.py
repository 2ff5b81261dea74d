"""benchmarks/suite_rounds.py, the tool that runs the README's test command N times on a fresh clone
(issue 33, item 8), on a tiny repository of its own: each round's record and table row, a red round
named with the test that failed and stopping the rounds, a dirty work tree said to be left out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.unit.test_ci_record import CONFTEST  # the record plugin, registered as tests/conftest.py does

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "suite_rounds.py"
# Green the first time; the first round leaves a file behind in the clone, so the second is red.
TESTS = """
from pathlib import Path

def test_the_clone_is_as_committed():
    mark = Path("left-behind.txt")
    seen = mark.exists()
    mark.write_text("round 1 was here")
    assert not seen, "a file of an earlier round is in the clone"

def test_always_passes():
    pass
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
                   check=True, capture_output=True, timeout=60)


def _source(tmp: Path) -> Path:
    src = tmp / "src-repo"
    src.mkdir()
    (src / "conftest.py").write_text(CONFTEST)
    (src / "test_rounds.py").write_text(TESTS)
    _git(src, "init", "-q")
    _git(src, "add", ".")
    _git(src, "commit", "-q", "-m", "tiny")
    return src


def test_rounds_keep_a_table_and_stop_at_the_first_red_round(tmp_path: Path) -> None:
    src = _source(tmp_path)
    (src / "test_rounds.py").write_text(TESTS + "\ndef test_uncommitted():\n    assert False\n")  # not in the clone
    work = tmp_path / "rounds"
    cmd = f"PYTHONPATH={REPO} {sys.executable} -m pytest -q -p no:cacheprovider"
    p = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "3", "--source", str(src), "--workdir", str(work),
                        "--command", cmd], capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items() if k != "RIGBENCH_CI_RECORD_DIR"})
    assert p.returncode == 1, p.stdout + p.stderr
    assert "has uncommitted changes; the clone holds the committed HEAD only" in p.stdout
    table = (work / "rounds.md").read_text()
    rows = [ln for ln in table.splitlines() if ln.startswith("| ") and not ln.startswith("| round")]
    assert [r.split(" | ")[1] for r in rows] == ["green", "RED"], table  # the third round never ran
    assert "| 2 / 0 / 0 |" in rows[0] and "| 1 / 1 / 0 |" in rows[1], table
    assert "1 of 2 rounds green; green rounds in a row at the end: 0." in table
    assert ("- round 2: test_rounds.py::test_the_clone_is_as_committed: AssertionError: a file of an earlier "
            "round is in the clone") in table
    data = json.loads((work / "rounds.json").read_text())
    assert [r["exit"] for r in data["rounds"]] == [0, 1] and data["meta"]["command"] == cmd
    # each round's record of its own, kept beside its log
    for n in (1, 2):
        rec = json.loads((work / "records" / f"round-{n}" / "summary.json").read_text())
        assert rec["exit_status"] == n - 1 and (work / f"round-{n}.log").exists()
    assert not (work / "records" / "round-3").exists()


def test_keep_going_runs_every_round_and_a_bad_count_is_refused(tmp_path: Path) -> None:
    src = _source(tmp_path)
    cmd = f"PYTHONPATH={REPO} {sys.executable} -m pytest -q -p no:cacheprovider"
    p = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "3", "--keep-going", "--source", str(src),
                        "--workdir", str(tmp_path / "w"), "--command", cmd], capture_output=True, text=True,
                       timeout=300, env={k: v for k, v in os.environ.items() if k != "RIGBENCH_CI_RECORD_DIR"})
    assert p.returncode == 1, p.stdout + p.stderr
    table = (tmp_path / "w" / "rounds.md").read_text()
    assert "1 of 3 rounds green; green rounds in a row at the end: 0." in table, table
    bad = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--rounds must be at least 1, not 0" in bad.stderr
