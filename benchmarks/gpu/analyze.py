"""Roofline and speculative speed-up: rigbench's model against the H200 measurements.

    python benchmarks/gpu/analyze.py benchmarks/results/h200

Reads the three run directories (no drafter, depth 4, depth 15) and the bandwidth probe, and
prints the tables of docs/gpu-validation.md. The draft cost `c` is calibrated on the most
decode-heavy scenario (rigbench.analysis._speculation) and the other scenarios are *predicted*.
Last, the host conditions each run recorded per window (runs of format 6 and later; older runs
say "not recorded"): the CPU the engine, rigbench and everything else used, steal, and any other
compute process on the engine's GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rigbench.analysis import assess_host, summarize_speed
from rigbench.analysis._roofline import roofline
from rigbench.analysis._speculation import fit_speculation
from rigbench.records import HostConditions
from rigbench.report._hardware import speculation_markdown
from rigbench.store import RunReader


def main(root: Path) -> None:
    runs_dir = root / "runs" if (root / "runs").is_dir() else root
    runs = {d.name.split("-h200-")[1].rsplit("-", 1)[0]: RunReader(d) for d in sorted(runs_dir.iterdir()) if d.is_dir()}
    bw = dict(line.split() for line in (root / "bandwidth.txt").read_text().splitlines())
    copy_gb_s = float(bw["d2d_copy_read_plus_write_gb_s"])
    base = runs["nodraft"]
    fp = base.header.fingerprint
    weights = fp.model.size_bytes if fp is not None else None
    assert weights is not None, "the baseline run's fingerprint records no model size"
    sb = {r.scenario: r for r in summarize_speed(base).rows}  # type: ignore[union-attr]
    print(f"weights {weights / 1e9:.2f} GB; device-to-device copy {copy_gb_s:.0f} GB/s (read + write); "
          f"H200 datasheet 4800 GB/s\n")
    print("| scenario | decode tok/s (median ± sd, n) | ceiling @ copy bw | efficiency | ceiling @ datasheet | efficiency |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in sb.items():
        d = row.decode_tok_s
        assert d is not None
        rc = roofline(weights, copy_gb_s, measured_tok_s=d.median)
        rd = roofline(weights, 4800.0, measured_tok_s=d.median)
        print(f"| {name} | {d.median:.1f} ± {d.std:.1f} ({d.n}) | {rc.ceiling_tok_s:.1f} | {rc.efficiency:.0%} | "
              f"{rd.ceiling_tok_s:.1f} | {rd.efficiency:.0%} |")
    for label in ("depth4", "depth15"):
        fit = fit_speculation(base, runs[label])
        assert fit is not None
        print("\n" + speculation_markdown(label, fit))
    print("\n" + host_markdown(runs))


def _span(vals: list[float | None], lo: bool = False) -> str:
    """The largest known value (with `lo`, smallest–largest), or "unknown"."""
    known = [x for x in vals if x is not None]
    if not known:
        return "unknown"
    return f"{min(known):.2f}–{max(known):.2f}" if lo else f"{max(known):.2f}"


def host_markdown(runs: dict[str, RunReader]) -> str:
    """Host conditions per run (rigbench's own judgement, `assess_host`), the busiest window's figures in
    cores (CPU seconds / wall seconds), and other compute processes on the engine's GPU."""
    lines = ["| run | windows | host | engine cores | rigbench cores, max | other processes, max | steal, max | "
             "other GPU compute processes |", "|---|---:|---|---:|---:|---:|---:|---|"]
    for label, run in runs.items():
        ws = run.records("host_conditions", HostConditions)
        v = assess_host(ws)
        if not v.recorded:
            lines.append(f"| {label} | – | not recorded | | | | | |")
            continue

        busy = sum(1 for r in v.rows if r.busy)
        gpu = sorted({f"{g.name} (pid {g.pid}, {g.used_memory_mib or 0:.0f} MiB)" for w in ws for g in (w.gpu_other or [])})
        known_gpu = any(w.gpu_other is not None for w in ws)
        lines.append(
            f"| {label} | {len(v.rows)} | {f'busy in {busy}' if busy else 'quiet'} | "
            f"{_span([r.engine_cores for r in v.rows], lo=True)} | {_span([r.rigbench_cores for r in v.rows])} | "
            f"{_span([r.other_cores for r in v.rows])} | {_span([r.steal_cores for r in v.rows])} | "
            f"{', '.join(gpu) if gpu else ('none' if known_gpu else 'unknown')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/h200"))
