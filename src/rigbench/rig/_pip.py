"""Fetching a file from PyPI with pip (`pip download --no-deps`), the only registry we rely on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rigbench.errors import SetupError

__all__ = ["pip_download"]


def pip_download(requirement: str, dest: Path, *, sdist: bool = False, wheel: bool = False,
                 timeout_s: float = 900) -> Path:
    """Download one distribution of `requirement` into `dest` and return its path.

    `sdist=True` asks for the source distribution of that project only (its build dependencies
    may still come as wheels); `wheel=True` for a wheel only, one this interpreter and platform can
    use (never an sdist, whose metadata step could build it).
    """
    dest.mkdir(parents=True, exist_ok=True)
    before = set(dest.iterdir())
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "-d", str(dest), requirement]
    if sdist:
        name = requirement.split("==")[0]
        cmd[4:4] = ["--no-binary", name]
    elif wheel:
        cmd[4:4] = ["--only-binary", ":all:"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise SetupError(f"`{' '.join(cmd)}` did not finish in {timeout_s:.0f} s. Check the network "
                         "to PyPI, or pass a local file instead.") from e
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
        raise SetupError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{tail}\n"
                         "rigbench needs PyPI to fetch this once; it is cached afterwards.")
    new = [p for p in dest.iterdir() if p not in before]
    stem = requirement.split("==")[0].replace("-", "_").lower()
    candidates = new or [p for p in dest.iterdir() if p.name.lower().startswith(stem)]
    if not candidates:
        raise SetupError(f"pip reported success for {requirement!r} but no file appeared in {dest}.")
    return sorted(candidates)[-1]
