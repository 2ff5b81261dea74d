"""Measure memory bandwidth on this host: what `rigbench probe` reports when no datasheet applies.

Host: numpy copies of a buffer far larger than the CPU caches; a copy reads and writes every byte,
so bandwidth = 2 x bytes / time (the STREAM "copy" convention). One thread per core copies its own
slice at once (numpy releases the GIL while copying), since one core alone reaches only part of a
multi-channel system's peak; the figure is labelled as measured, never as the peak.
GPU: the same with torch on the device, when torch and a GPU are present.

`machine_bandwidth` runs both once per machine (keyed by CPU model, cores, memory and GPUs) and
caches the result, so every run's fingerprint carries it and every report can draw the roofline.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import numpy as np

from rigbench.records import Frozen

__all__ = ["BandwidthMeasurement", "machine_bandwidth", "machine_key", "measure_gpu_bandwidth", "measure_host_bandwidth"]


class BandwidthMeasurement(Frozen):
    kind: Literal["bandwidth"] = "bandwidth"
    device: str  # "host" or the GPU's name
    method: str
    buffer_bytes: int
    repeats: int
    bandwidth_gb_s: float  # best of the repeats (least disturbed), decimal GB/s
    median_gb_s: float


def measure_host_bandwidth(*, buffer_bytes: int = 512 * 1024**2, repeats: int = 7,
                           threads: int | None = None) -> BandwidthMeasurement:
    # the CPUs this process may use (taskset, a container's cpuset), not the host's count
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n_threads = max(1, threads or min(usable, 16))
    n = buffer_bytes // 8 // n_threads * n_threads
    src = np.ones(n, dtype=np.float64)
    dst = np.empty_like(src)
    chunks = [(dst[k * (n // n_threads):(k + 1) * (n // n_threads)],
               src[k * (n // n_threads):(k + 1) * (n // n_threads)]) for k in range(n_threads)]
    rates: list[float] = []
    with ThreadPoolExecutor(n_threads) as pool:
        def copy_all() -> None:
            list(pool.map(lambda c: np.copyto(c[0], c[1]), chunks))

        copy_all()  # touch every page (and start the threads) before timing
        for _ in range(repeats):
            t0 = time.perf_counter()
            copy_all()
            dt = time.perf_counter() - t0
            rates.append(2 * src.nbytes / dt / 1e9)
    method = (f"numpy copy, 2 x bytes / time, {n_threads} thread{'s' if n_threads > 1 else ''} "
              "(STREAM copy convention)")
    return BandwidthMeasurement(device="host", method=method, buffer_bytes=src.nbytes, repeats=repeats,
                                bandwidth_gb_s=max(rates), median_gb_s=float(np.median(rates)))


def measure_gpu_bandwidth(*, buffer_bytes: int = 2 * 1024**3, repeats: int = 10) -> BandwidthMeasurement | None:
    """Device-to-device copy bandwidth of GPU 0, or None without torch or a GPU."""
    try:
        # lazy: torch is optional (present only where a GPU stack is)
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    n = buffer_bytes // 4
    src = torch.ones(n, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    torch.cuda.synchronize()
    rates: list[float] = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        rates.append(2 * n * 4 / (start.elapsed_time(end) / 1000) / 1e9)
    return BandwidthMeasurement(device=torch.cuda.get_device_name(0), method="torch device copy, 2 x bytes / time",
                                buffer_bytes=n * 4, repeats=repeats, bandwidth_gb_s=max(rates),
                                median_gb_s=float(np.median(rates)))


def machine_key(cpu_model: str | None, cores: int | None, memory_bytes: int | None, gpus: list[str]) -> str:
    text = f"{cpu_model}|{cores}|{memory_bytes}|{'; '.join(gpus)}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def machine_bandwidth(cache: Path, *, cpu_model: str | None, cores: int | None, memory_bytes: int | None,
                      gpus: list[str], probe: bool = True, refresh: bool = False) -> dict[str, object] | None:
    """This machine's measured bandwidth (host copy; device copy when nvidia-smi lists a GPU), cached.

    Returns the fields of the fingerprint's MemoryBandwidth, or None when nothing is cached and
    `probe` is False; `refresh` measures again and replaces the cached figure. A GPU that cannot be measured (no torch with CUDA, out of memory) is recorded
    as unknown with the reason, never guessed.
    """
    key = machine_key(cpu_model, cores, memory_bytes, gpus)
    path = cache / f"{key}.json"
    try:
        cached = json.loads(path.read_text())
        if not refresh and isinstance(cached, dict) and cached.get("machine_key") == key:
            return cached
    except (OSError, ValueError):
        pass
    if not (probe or refresh):
        return None
    load_1m = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    host = measure_host_bandwidth(buffer_bytes=256 * 1024**2)
    gpu: BandwidthMeasurement | None = None
    gpu_note: str | None = None
    if gpus:
        try:
            gpu = measure_gpu_bandwidth(buffer_bytes=1024**3)
            if gpu is None:
                gpu_note = "unknown: nvidia-smi lists a GPU but torch with CUDA is not installed here"
        except Exception as e:  # OOM while an engine holds the GPU, driver errors: say so, keep going
            gpu_note = f"unknown: the device copy failed ({type(e).__name__}: {str(e)[:120]})"
    else:
        gpu_note = "no GPU (nvidia-smi lists none)"
    out: dict[str, object] = {
        "machine_key": key,
        "host_gb_s": round(host.bandwidth_gb_s, 2), "host_method": host.method,
        "gpu_name": gpu.device if gpu else None, "gpu_gb_s": round(gpu.bandwidth_gb_s, 1) if gpu else None,
        "gpu_method": gpu.method if gpu else gpu_note,
        "measured_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        # a copy measured on a busy machine reads low: the report shows the load it was measured under
        "load_avg_1m": round(load_1m, 2) if load_1m is not None else None,
    }
    tmp = path.with_suffix(f".{os.getpid()}.part")
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, path)
    return out
