"""`rigbench probe`: this host's memory bandwidth (and GPU's, with torch), for the roofline."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from rigbench.analysis._bandwidth import measure_gpu_bandwidth, measure_host_bandwidth
from rigbench.analysis._roofline import lookup_device
from rigbench.cli._app import app
from rigbench.rig import host_info

__all__ = ["probe"]


@app.command()
def probe(
    buffer_mib: Annotated[int, typer.Option(help="Host copy buffer, MiB (far above the CPU caches).")] = 512,
) -> None:
    """Measure memory bandwidth here; name the datasheet figure when the device is known."""
    console = Console()
    host = host_info()
    with console.status("measuring host memory bandwidth (numpy copies)..."):
        m = measure_host_bandwidth(buffer_bytes=buffer_mib * 1024**2)
    console.print(f"host ({host.cpu_model or 'unknown CPU'}): {m.bandwidth_gb_s:.1f} GB/s best, "
                  f"{m.median_gb_s:.1f} median over {m.repeats} copies of {m.buffer_bytes / 1024**2:.0f} MiB "
                  f"[dim]({m.method}; a lower bound on the peak)[/]")
    with console.status("measuring GPU bandwidth (torch, if present)..."):
        g = measure_gpu_bandwidth()
    if g is None:
        console.print("GPU: not measured (no torch with a CUDA device)")
    else:
        console.print(f"GPU {g.device}: {g.bandwidth_gb_s:.0f} GB/s best ({g.method})")
    for name in ([g.device] if g else []) + list(host.gpus) + [host.cpu_model or ""]:
        dev = lookup_device(name) if name else None
        if dev is not None:
            console.print(f"datasheet: {dev.name} {dev.bandwidth_gb_s:g} GB/s ({dev.source})")
            break
