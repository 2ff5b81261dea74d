"""`rigbench probe`: this machine's memory bandwidth (and its GPU's, with torch), for the roofline.

Every run measures it once per machine by itself (cached); this command measures again, replaces
the cached figure, and names the datasheet figure when the device is in rigbench's table.
"""

from __future__ import annotations

from rigbench.analysis import lookup_device, machine_bandwidth
from rigbench.cli._app import app
from rigbench.cli._console import make_console
from rigbench.outside import for_console
from rigbench.rig import cache_dir, host_info

__all__ = ["probe"]


@app.command()
def probe() -> None:
    """Measure memory bandwidth here (host copy; GPU device copy with torch) and cache it for every run's roofline."""
    console = make_console()
    host = host_info(probe_bandwidth=False)
    with console.status("measuring memory bandwidth (numpy copies on every core; torch device copy if a GPU)..."):
        bw = machine_bandwidth(cache_dir("bandwidth"), cpu_model=host.cpu_model, cores=host.cpu_cores_logical,
                               memory_bytes=host.memory_bytes, gpus=host.gpus, refresh=True)
    assert bw is not None
    # the CPU and GPU names and the methods come from the system and its drivers: shown as text (rigbench.outside)
    console.print(f"host ({for_console(host.cpu_model or 'unknown CPU')}): {bw['host_gb_s']} GB/s best copy "
                  f"[dim]({for_console(bw['host_method'])}; a lower bound on the peak)[/]", highlight=False)
    if bw.get("gpu_gb_s"):
        console.print(f"GPU {for_console(bw['gpu_name'])}: {bw['gpu_gb_s']} GB/s best copy "
                      f"[dim]({for_console(bw['gpu_method'])})[/]", highlight=False)
    else:
        console.print(f"GPU: {for_console(bw['gpu_method'])}", highlight=False)
    for name in ([str(bw["gpu_name"])] if bw.get("gpu_name") else []) + list(host.gpus) + [host.cpu_model or ""]:
        dev = lookup_device(name) if name else None
        if dev is not None:
            console.print(f"datasheet: {for_console(dev.name)} {dev.bandwidth_gb_s:g} GB/s ({for_console(dev.source)}); "
                          "the roofline uses "
                          "the datasheet figure when the device is known")
            break
    console.print(f"cached for this machine (key {for_console(bw['machine_key'])}): every `rigbench run` report uses it for the "
                  "decode roofline unless --bandwidth-gbs is given.")
