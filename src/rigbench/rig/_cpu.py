"""This CPU's instruction-set features, as the kernel reports them, and what they mean for a build.

llama.cpp's default build compiles ggml-cpu with `-march=native`, so every extension the compiler
sees is used, Intel AMX included. On AMX Xeons that path crashed the pinned build at model load
(issue 16: SIGSEGV on `ldtilecfg` in `ggml_backend_amx_mul_mat`). rigbench instead turns on each
ISA extension explicitly, only after checking it in /proc/cpuinfo, and leaves AMX off.
"""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

from rigbench.records import Frozen

__all__ = ["CpuFeatures", "affinity_threads", "cpu_features", "isa_cmake_flags", "parse_cpuinfo", "usable_cpus"]

# /proc/cpuinfo flag -> the ggml CMake option that compiles code for it (ggml/CMakeLists.txt of the
# pinned sdist). An option is turned on only when every flag it needs is present.
_X86_OPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GGML_SSE42", ("sse4_2",)),
    ("GGML_AVX", ("avx",)),
    ("GGML_AVX2", ("avx2",)),
    ("GGML_FMA", ("fma",)),
    ("GGML_F16C", ("f16c",)),
    ("GGML_BMI2", ("bmi2",)),
    ("GGML_AVX_VNNI", ("avx_vnni",)),
    # ggml's AVX512 option compiles with -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw
    ("GGML_AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("GGML_AVX512_VBMI", ("avx512vbmi",)),
    ("GGML_AVX512_VNNI", ("avx512_vnni",)),
    ("GGML_AVX512_BF16", ("avx512_bf16",)),
)
# Never turned on by rigbench, even when present: the AMX path is the one that crashed.
_X86_ALWAYS_OFF = ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")
# Flags that decide which code a build may run; the cache key hashes these, not the whole list.
_RELEVANT = {f for _, needs in _X86_OPTIONS for f in needs} | {"amx_tile", "amx_int8", "amx_bf16"} | {
    "asimd", "sve", "sve2", "i8mm", "bf16", "asimddp", "fphp", "asimdhp"}


class CpuFeatures(Frozen):
    arch: str  # platform.machine(): x86_64, aarch64, ...
    model: str | None
    flags: tuple[str, ...]  # the ISA flags that matter to a build, sorted

    @property
    def key(self) -> str:
        """Short id of arch + model + relevant flags: a cache built elsewhere does not match."""
        text = f"{self.arch}|{self.model}|{' '.join(self.flags)}"
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    @property
    def has_amx(self) -> bool:
        return any(f.startswith("amx") for f in self.flags)


def parse_cpuinfo(text: str, arch: str) -> CpuFeatures:
    """The first processor's model name and ISA flags (`flags` on x86, `Features` on arm64)."""
    model = None
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "cpu model") and model is None:
            model = value.strip() or None
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return CpuFeatures(arch=arch, model=model, flags=tuple(sorted(flags & _RELEVANT)))


def cpu_features(cpuinfo: Path = Path("/proc/cpuinfo")) -> CpuFeatures:
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        text = ""
    return parse_cpuinfo(text, platform.machine())


def isa_cmake_flags(cpu: CpuFeatures) -> list[str]:
    """`-DGGML_NATIVE=OFF` plus each x86 extension ON exactly when /proc/cpuinfo lists it; AMX OFF.

    Empty for other architectures (ggml's own feature probing applies there).
    """
    if cpu.arch not in ("x86_64", "AMD64", "i686"):
        return []
    have = set(cpu.flags)
    out = ["-DGGML_NATIVE=OFF"]
    for option, needs in _X86_OPTIONS:
        out.append(f"-D{option}={'ON' if all(f in have for f in needs) else 'OFF'}")
    out += [f"-D{option}=OFF" for option in _X86_ALWAYS_OFF]
    return out


def usable_cpus() -> int:
    """CPUs this process may run on: the affinity mask (taskset, a container's cpuset), not the host's count."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def affinity_threads() -> int | None:
    """The thread count to give llama-server when the process is confined to fewer CPUs than the host has.

    llama.cpp sizes its thread pool from the host's cores and ignores the affinity mask, so under
    `taskset -c 0,1` on a 16-core host it starts 16 busy-waiting threads on 2 cores (decode slows
    several-fold). None when the mask covers every CPU (llama.cpp's own default is then right).
    """
    usable, total = usable_cpus(), os.cpu_count() or 1
    return usable if usable < total else None

