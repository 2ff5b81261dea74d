"""Taking the fingerprint of this machine and a model file (the types are `rigbench.records`'
`Fingerprint`, `HostInfo`, `ModelInfo`, ...: what a run stores, every reader can read)."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import psutil

from rigbench._version import __version__
from rigbench.analysis import machine_bandwidth
from rigbench.records import EngineBinary, Fingerprint, HostInfo, MemoryBandwidth, ModelInfo
from rigbench.rig._cache import cache_dir
from rigbench.rig._cpu import cpu_features
from rigbench.rig._models import sha256_file

__all__ = ["EngineBinary", "Fingerprint", "HostInfo", "MemoryBandwidth", "ModelInfo", "host_info", "model_info"]


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
