"""Golden CLI output (as pyperf does): `rigbench report RUN`, `rigbench compare A B` and
`rigbench ls` on checked-in runs, and `rigbench run --help`, at 80 columns,
compared line by line with tests/golden/cli/.

After an intended change of the output, regenerate and review the diff:
    RIGBENCH_UPDATE_GOLDEN=1 python -m pytest -q tests/unit/test_golden_cli.py
A case whose file this rewrites fails once, naming the file, so an update never passes silently;
under CI=true the switch is refused (tests/needs.py).
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.needs import golden_update_requested

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ROOT / "tests" / "golden" / "cli"
H200 = "benchmarks/results/h200"
CASES = {
    "report_run_v1": ["report", "tests/golden/run_v1"],
    "report_emulator_b": ["report", "tests/golden/emulator_b"],
    "compare_synthetic": ["compare", f"{H200}/20261129-191407-h200-nodraft-5101",
                          f"{H200}/20261129-191906-h200-depth4-1c8a"],
    "compare_quality": ["compare", "tests/golden/emulator_a", "tests/golden/emulator_b"],
    "ls_h200": ["ls", H200],
    "run_help": ["run", "--help"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_output_matches_golden(case: str) -> None:
    update = golden_update_requested()
    res = subprocess.run([sys.executable, "-m", "rigbench", *CASES[case]], capture_output=True, text=True,
                         cwd=ROOT, timeout=300, env={**os.environ, "COLUMNS": "80", "TERM": "dumb"})
    assert res.returncode == 0, res.stderr
    got = "\n".join(line.rstrip() for line in res.stdout.splitlines()) + "\n"
    path = EXPECTED / f"{case}.txt"
    want = path.read_text() if path.exists() else ""  # a new case: its first update writes the file
    if update and got != want:
        path.write_text(got)
        pytest.fail(f"rewrote {path.relative_to(ROOT)}: review `git diff` and run again without RIGBENCH_UPDATE_GOLDEN")
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), str(path), "now"))
        pytest.fail(f"`rigbench {' '.join(CASES[case])}` at 80 columns differs from {path.name} "
                    f"(regenerate with RIGBENCH_UPDATE_GOLDEN=1 if intended):\n{diff}")
    assert max(len(line) for line in got.splitlines()) <= 80
    assert "…" not in got  # nothing cut


def test_the_update_switch_is_refused_under_ci() -> None:
    case = "ls_h200"
    path = EXPECTED / f"{case}.txt"
    before = path.read_bytes()
    env = {**os.environ, "CI": "true", "RIGBENCH_UPDATE_GOLDEN": "1", "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        f"tests/unit/test_golden_cli.py::test_cli_output_matches_golden[{case}]"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stdout[-2000:]
    assert "golden files are never rewritten in CI" in p.stdout, p.stdout[-2000:]
    assert path.read_bytes() == before
