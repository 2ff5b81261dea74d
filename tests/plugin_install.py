"""Install the test engine package (tests/fixtures/plugin_engine) for real, into a directory of its own.

`pip install --no-deps --no-index --target DIR` of a copy of the fixture (it builds with its own backend,
offline; the build leaves nothing in the source tree); DIR then goes on the PYTHONPATH of the processes that should see the engine (a rigbench
subprocess, a Ray node). The shared venv is never touched: nothing is left installed after a test.
Broken packages are written as a bare `.dist-info` (metadata and entry point) beside their module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.needs import missing

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "plugin_engine"
DIST = "rigbench-emulator-engine"

__all__ = ["DIST", "FIXTURE", "env_with", "install_plugin", "write_dist"]


def install_plugin(target: Path) -> Path:
    """The fixture package installed into `target` (its `.dist-info` and module); returns `target`."""
    src = target.parent / "plugin-src"
    shutil.copytree(FIXTURE, src)
    # its build backend is its own (no setuptools, no wheel): offline, in any environment pip runs in
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--disable-pip-version-check",
            "--target", str(target), str(src)]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        missing(f"cannot install the test engine package: {res.stderr[-2000:]}")
    assert list(target.glob("rigbench_emulator_engine-*.dist-info/entry_points.txt")), list(target.iterdir())
    return target


def write_dist(target: Path, dist: str, module: str, code: str, entry_points: dict[str, str]) -> Path:
    """A package as an installer leaves it: `module.py` and `DIST-0.1.dist-info` with its entry points."""
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{module}.py").write_text(textwrap.dedent(code))
    info = target / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[rigbench.engines]\n{lines}")
    return target


def env_with(*paths: Path) -> dict[str, str]:
    """This process's environment with `paths` first on PYTHONPATH (the worktree's own stays)."""
    old = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), *([old] if old else [])]),
            "COLUMNS": "200", "RAY_USAGE_STATS_ENABLED": "0"}
