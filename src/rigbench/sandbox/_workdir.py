"""The task's working copy and the path rules of the model's file tools."""

from __future__ import annotations

import fnmatch
import shutil
import tempfile
from pathlib import Path

__all__ = ["GRADER_NEVER_COPIES", "PathRefused", "Workdir"]

_READ_LIMIT_BYTES = 64 * 1024
_WRITE_LIMIT_BYTES = 256 * 1024
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".tmp", ".rigbench-*")
_RIGBENCH_OWN = {"__pycache__", ".pytest_cache", ".tmp"}  # never the model's: not listed, not graded


def _ours(rel: Path) -> bool:
    return bool(_RIGBENCH_OWN & set(rel.parts)) or rel.name.startswith(".rigbench-") or rel.suffix == ".pyc"

# Files that change how Python or pytest behave rather than what the code does: a model that
# writes them could grade itself (a conftest hook that turns failures into passes), so the grader
# never takes them from the model's copy, whatever the task allows.
GRADER_NEVER_COPIES = ("conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml",
                       "setup.cfg", "tox.ini", "setup.py", "sitecustomize.py", "usercustomize.py", "*.pth",
                       ".pytest_cache", "__pycache__")


class PathRefused(ValueError):
    """A file-tool path that leaves the task directory. The model's error: reported back to it."""


class Workdir:
    """A temporary copy of a task project. Every path the model names is checked here."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.refused = 0

    @classmethod
    def copy_of(cls, project: Path) -> Workdir:
        tmp = Path(tempfile.mkdtemp(prefix="rigbench-task-"))
        dest = tmp / "project"
        shutil.copytree(project, dest, symlinks=True, ignore=_IGNORE)
        return cls(dest)

    def cleanup(self) -> None:
        shutil.rmtree(self.root.parent, ignore_errors=True)

    def resolve(self, rel: str) -> Path:
        """The real path of `rel` inside the task directory, or PathRefused saying why not."""
        if not isinstance(rel, str) or not rel.strip():
            self.refused += 1
            raise PathRefused("path must be a non-empty relative path inside the project")
        if rel.startswith(("/", "\\", "~")) or (len(rel) > 1 and rel[1] == ":"):
            self.refused += 1
            raise PathRefused(f"absolute path {rel!r} refused: use a path relative to the project root")
        if ".." in Path(rel).parts:
            self.refused += 1
            raise PathRefused(f"path {rel!r} refused: '..' may not leave the project directory")
        real = (self.root / rel).resolve()
        if real != self.root and self.root not in real.parents:
            self.refused += 1
            raise PathRefused(f"path {rel!r} refused: it resolves outside the project (symlink)")
        return real

    def read_file(self, rel: str) -> str:
        p = self.resolve(rel)
        if not p.is_file():
            raise FileNotFoundError(f"no such file: {rel}")
        return p.read_bytes()[:_READ_LIMIT_BYTES].decode(errors="replace")

    def write_file(self, rel: str, content: str) -> str:
        p = self.resolve(rel)
        raw = content.encode()
        if len(raw) > _WRITE_LIMIT_BYTES:
            raise ValueError(f"content of {len(raw)} bytes is over the {_WRITE_LIMIT_BYTES}-byte limit")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(raw)
        return f"wrote {len(raw)} bytes to {rel}"

    def list_files(self, rel: str = ".") -> list[str]:
        base = self.resolve(rel or ".")
        if not base.is_dir():
            raise FileNotFoundError(f"no such directory: {rel}")
        out = []
        for p in sorted(base.rglob("*")):
            if _ours(p.relative_to(self.root)):
                continue
            if p.is_file() and not p.is_symlink():
                out.append(str(p.relative_to(self.root)))
        return out

    def grading_copy(self, pristine: Path, allowed: list[str],
                     protected: tuple[str, ...] = ()) -> tuple[Workdir, list[str], list[str]]:
        """A fresh copy of `pristine` plus only the changed files of this copy that match `allowed`.

        Globs are fnmatch patterns on the relative path (`*` also crosses `/`). Returns the copy, the
        files taken and the changed files left out (with why, for the record). Symlinks, files under
        a `protected` directory (the tests) and GRADER_NEVER_COPIES names are never taken.
        """
        grade = Workdir.copy_of(pristine)
        taken: list[str] = []
        left: list[str] = []
        for p in sorted(self.root.rglob("*")):
            rel = p.relative_to(self.root).as_posix()
            if p.is_dir() or _ours(Path(rel)):
                continue
            orig = pristine / rel
            if p.is_symlink() or self.root not in p.resolve().parents:
                left.append(f"{rel} (symlink)")
                continue
            if orig.is_file() and orig.read_bytes() == p.read_bytes():
                continue
            if any(rel.startswith(d.rstrip("/") + "/") for d in protected):
                left.append(f"{rel} (tests are graded as shipped)")
            elif any(fnmatch.fnmatch(part, pat) for part in Path(rel).parts for pat in GRADER_NEVER_COPIES):
                left.append(f"{rel} (never graded: changes how Python or pytest run)")
            elif not any(fnmatch.fnmatch(rel, pat) for pat in allowed):
                left.append(f"{rel} (outside the files the task allows to change: {', '.join(allowed)})")
            else:
                dest = grade.root / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(p.read_bytes())
                taken.append(rel)
        # A file the model deleted stays as it was in the pristine copy: deletion is not a fix.
        return grade, taken, left
