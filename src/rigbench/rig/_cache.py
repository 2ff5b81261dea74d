"""Where rigbench keeps what it downloads and builds (under the user cache dir)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

__all__ = ["cache_dir"]


def cache_dir(*parts: str) -> Path:
    """`$RIGBENCH_CACHE_DIR` or the platform's user cache dir for rigbench, joined with `parts`."""
    root = Path(os.environ.get("RIGBENCH_CACHE_DIR") or platformdirs.user_cache_dir("rigbench"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
