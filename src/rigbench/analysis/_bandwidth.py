"""Measure memory bandwidth on this host: what `rigbench probe` reports when no datasheet applies.

Host: numpy copies of a buffer far larger than the CPU caches; a copy reads and writes every byte,
so bandwidth = 2 x bytes / time (the STREAM "copy" convention). Single-threaded numpy reaches only
part of a multi-channel system's peak; the figure is labelled as measured, never as the peak.
GPU: the same with torch on the device, when torch and a GPU are present.
"""

from __future__ import annotations

import time
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = ["BandwidthMeasurement", "measure_gpu_bandwidth", "measure_host_bandwidth"]


class BandwidthMeasurement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["bandwidth"] = "bandwidth"
    device: str  # "host" or the GPU's name
    method: str
    buffer_bytes: int
    repeats: int
    bandwidth_gb_s: float  # best of the repeats (least disturbed), decimal GB/s
    median_gb_s: float


def measure_host_bandwidth(*, buffer_bytes: int = 512 * 1024**2, repeats: int = 7) -> BandwidthMeasurement:
    n = buffer_bytes // 8
    src = np.ones(n, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # touch every page before timing
    rates: list[float] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        dt = time.perf_counter() - t0
        rates.append(2 * src.nbytes / dt / 1e9)
    return BandwidthMeasurement(device="host", method="numpy copy, 2 x bytes / time, single thread",
                                buffer_bytes=src.nbytes, repeats=repeats, bandwidth_gb_s=max(rates),
                                median_gb_s=float(np.median(rates)))


def measure_gpu_bandwidth(*, buffer_bytes: int = 2 * 1024**3, repeats: int = 10) -> BandwidthMeasurement | None:
    """Device-to-device copy bandwidth of GPU 0, or None without torch or a GPU."""
    try:
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
