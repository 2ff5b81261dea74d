"""The prebuilt llama-server: llama.cpp's server from the pinned `xllamacpp` wheel, no compiler needed.

The wheel (PyPI, one manylinux x86_64 extension, abi3) holds llama.cpp's server code compiled into a
Python extension. rigbench fetches it with `pip download`, checks its sha256, unpacks it into the cache
(never into the user's environment) and writes a launcher named `llama-server` beside it that runs
`_xserver.py`: llama.cpp's own argument parser, then its server, so the rig's command line is the
same as for a built binary (docs/engines.md, "The prebuilt llama-server").

The build from the pinned sdist (`_build.py`) is the fallback: no wheel for this platform, a CPU
without the instructions the wheel was compiled for, a crash in the smoke test, a flag the prebuilt's
parser refuses, or a build asked for with RIGBENCH_LLAMA_BUILD.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from rigbench.errors import SetupError
from rigbench.records import Frozen
from rigbench.rig._cache import cache_dir
from rigbench.rig._cpu import CpuFeatures
from rigbench.rig._models import sha256_file
from rigbench.rig._pip import pip_download
from rigbench.rig.engines._llamacpp._build import BuildProgress

__all__ = [
    "PREBUILT",
    "PrebuiltInfo",
    "PrebuiltWheel",
    "install_prebuilt",
    "installed_prebuilt",
    "prebuilt_refusal",
    "prebuilt_rejects_args",
    "read_prebuilt_info",
]


class PrebuiltWheel(Frozen):
    """One pinned wheel: what it is, how to check it, and what it needs of the machine."""

    package: str
    version: str
    filename: str
    sha256: str
    size_bytes: int
    system: str  # platform.system()
    machine: str  # platform.machine()
    llama_cpp_build: str  # the llama.cpp release it vendors (the version's last part: YEAR.MONTH.BUILD)
    # /proc/cpuinfo flags its CPU code was compiled for (no runtime dispatch: `xllamacpp.get_system_info()`
    # of this wheel reads SSE3 SSSE3 AVX AVX2 F16C FMA BMI2); a CPU without one of them gets SIGILL
    cpu_flags: tuple[str, ...]
    features: tuple[str, ...]  # as get_system_info() names them, for the fingerprint

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


# Checked 2026-12-03: `pip download --no-deps --only-binary=:all: xllamacpp==2026.10.11549` (33.8 MB).
PREBUILT = PrebuiltWheel(
    package="xllamacpp", version="2026.10.11549",
    filename="xllamacpp-2026.10.11549-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    sha256="c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261", size_bytes=33_827_498,
    system="Linux", machine="x86_64", llama_cpp_build="b11549",
    cpu_flags=("sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"),
    features=("SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2", "LLAMAFILE", "OPENMP", "REPACK"))

_SHIM = Path(__file__).with_name("_xserver.py")
# The wheel's extension links the system's OpenMP runtime (libgomp.so.1, not bundled): GCC's runtime
# library, present wherever GCC is, but not on every minimal image.
LIBGOMP_HINT = "install the OpenMP runtime (Debian/Ubuntu: apt-get install libgomp1; Fedora: dnf install libgomp)"


class PrebuiltInfo(Frozen):
    """Written next to the unpacked wheel: what the launcher runs (recorded in fingerprints)."""

    package: str
    version: str
    sha256: str
    llama_cpp_build: str
    features: list[str]


def prebuilt_refusal(cpu: CpuFeatures, wheel: PrebuiltWheel = PREBUILT) -> str | None:
    """Why the prebuilt cannot serve on this machine (then rigbench builds), or None."""
    asked = os.environ.get("RIGBENCH_LLAMA_BUILD")
    if asked:
        return f"a build was asked for (RIGBENCH_LLAMA_BUILD={asked})"
    if (platform.system(), cpu.arch) != (wheel.system, wheel.machine):
        return (f"{wheel.requirement} is pinned for {wheel.system} {wheel.machine} only; this is "
                f"{platform.system()} {cpu.arch}")
    missing = [f for f in wheel.cpu_flags if f not in cpu.flags]
    if missing:
        return (f"its CPU code needs {', '.join(wheel.cpu_flags)}; this CPU ({cpu.model or 'unknown model'}) "
                f"lacks {', '.join(missing)}")
    return None


def _home(wheel: PrebuiltWheel) -> Path:
    return cache_dir("llama-server", f"prebuilt-{wheel.package}-{wheel.version}-{wheel.machine}")


def _launcher_text(home: Path) -> str:
    """The launcher, for the Python running rigbench now; it names the shim's hash, so a changed shim
    (or interpreter) changes the launcher, and its smoke test is taken again."""
    shim_sha = hashlib.sha256(_SHIM.read_bytes()).hexdigest()[:16]
    return ("#!/bin/sh\n"
            "# llama-server: llama.cpp's server from the pinned xllamacpp wheel (rigbench's prebuilt,\n"
            f"# docs/engines.md); xserver.py sha256 {shim_sha}\n"
            f"exec {shlex.quote(sys.executable)} -I {shlex.quote(str(home / 'bin' / 'xserver.py'))} \"$@\"\n")


def read_prebuilt_info(binary: Path) -> PrebuiltInfo | None:
    """The PrebuiltInfo next to a launcher rigbench wrote, or None."""
    try:
        return PrebuiltInfo.model_validate_json((binary.parent.parent / "prebuilt-info.json").read_text())
    except (OSError, ValueError):
        return None


def _write_launcher(home: Path) -> Path:
    bindir = home / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    shim = bindir / "xserver.py"
    if not shim.is_file() or shim.read_bytes() != _SHIM.read_bytes():
        tmp = shim.with_suffix(f".{os.getpid()}.part")
        shutil.copyfile(_SHIM, tmp)
        os.replace(tmp, shim)
    launcher = bindir / "llama-server"
    text = _launcher_text(home)
    if not launcher.is_file() or launcher.read_text() != text:
        tmp = launcher.with_suffix(f".{os.getpid()}.part")
        tmp.write_text(text)
        tmp.chmod(0o755)
        os.replace(tmp, launcher)
    return launcher


def installed_prebuilt(wheel: PrebuiltWheel = PREBUILT) -> Path | None:
    """The launcher of the unpacked wheel, brought up to date for this interpreter; None if not unpacked."""
    home = _home(wheel)
    info = read_prebuilt_info(home / "bin" / "llama-server")
    if info is None or info.sha256 != wheel.sha256 or not (home / "lib" / wheel.package).is_dir():
        return None
    return _write_launcher(home)


def install_prebuilt(progress: BuildProgress | None = None, wheel: PrebuiltWheel = PREBUILT) -> Path:
    """Fetch the pinned wheel (sha256-checked), unpack it into the cache and return its launcher."""
    report = progress or (lambda done, total, msg: None)
    home = _home(wheel)
    with (home / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second rigbench waits, then finds it unpacked
        found = installed_prebuilt(wheel)
        if found is not None:
            return found
        path = _fetch(wheel, report)
        report(0, None, f"unpacking {wheel.filename}")
        lib, part = home / "lib", home / "lib.part"
        shutil.rmtree(part, ignore_errors=True)
        try:
            with zipfile.ZipFile(path) as zf:
                zf.extractall(part, [m for m in zf.namelist() if m.startswith(f"{wheel.package}/")])
        except zipfile.BadZipFile as e:
            path.unlink(missing_ok=True)
            raise SetupError(f"{path} is not a valid wheel ({e}); deleted it: run again to fetch it anew.") from e
        shutil.rmtree(lib, ignore_errors=True)
        os.replace(part, lib)
        launcher = _write_launcher(home)
        info = PrebuiltInfo(package=wheel.package, version=wheel.version, sha256=wheel.sha256,
                            llama_cpp_build=wheel.llama_cpp_build, features=list(wheel.features))
        (home / "prebuilt-info.json").write_text(info.model_dump_json(indent=1))
        report(1, 1, f"unpacked {wheel.requirement}")  # a finished step: the progress line stops spinning
        return launcher


def _fetch(wheel: PrebuiltWheel, report: BuildProgress) -> Path:
    """The pinned wheel: the cached copy when its sha256 matches (no network), else `pip download`."""
    cached = cache_dir("downloads") / wheel.filename
    if cached.is_file() and sha256_file(cached) == wheel.sha256:
        return cached
    report(0, None, f"downloading {wheel.requirement} ({wheel.size_bytes / 1e6:.0f} MB, a prebuilt llama-server)")
    got = pip_download(wheel.requirement, cache_dir("downloads"), wheel=True)
    sha = sha256_file(got)
    if got.name != wheel.filename or sha != wheel.sha256:
        raise SetupError(f"pip fetched {got.name} with sha256 {sha}, not the pinned {wheel.filename} "
                         f"({wheel.sha256}); not using it. If the index (or a proxy) serves other files for "
                         f"{wheel.requirement}, set RIGBENCH_LLAMA_BUILD=isa to build llama-server instead.")
    return got


def prebuilt_rejects_args(launcher: Path, args: list[str], timeout_s: float = 60) -> str | None:
    """What llama.cpp's parser in the prebuilt says of `args` (a user's extra engine arguments) when it
    refuses them; None when it takes them. Nothing is loaded: the launcher only parses."""
    if not args:
        return None
    env = {**os.environ, "RIGBENCH_XSERVER_PARSE_ONLY": "1"}
    try:
        proc = subprocess.run([str(launcher), *args], capture_output=True, text=True, timeout=timeout_s, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"its argument check did not run ({type(e).__name__}: {e})"
    if proc.returncode == 0:
        return None
    said = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines()
            if ln.strip() and ln.strip() not in ("rejected", "usage:") and not ln.startswith("to show")]
    return (f"its llama.cpp ({PREBUILT.llama_cpp_build}) refuses the engine arguments {shlex.join(args)}: "
            + ("; ".join(said[:3]) or f"exit {proc.returncode}"))
