"""Roofline and speculative speed-up: rigbench's model against the H200 measurements.

    python benchmarks/gpu/analyze.py benchmarks/results/h200

Reads the three run directories (no drafter, depth 4, depth 15) and the bandwidth probe, and
prints the tables of docs/gpu-validation.md. The draft cost `c` is calibrated on one scenario
(code_generation, nearly pure decode) and the other scenarios are *predicted*, not fitted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from statistics import median

from rigbench.analysis import summarize_speed
from rigbench.analysis._roofline import predict_speedup, roofline
from rigbench.store import RunReader
from rigbench.suites.speed import SpeedRequest

CALIBRATE_ON = "code_generation"


def acceptance(reader: RunReader) -> dict[str, float]:
    """Mean acceptance length per scenario from llama.cpp's per-request timings (bonus token included)."""
    out: dict[str, list[float]] = {}
    for r in reader.records("speed_request", SpeedRequest):
        t = r.result.timings or {}
        if r.warmup or "draft_n_accepted" not in t or not t.get("predicted_n"):
            continue
        steps = t["predicted_n"] - t["draft_n_accepted"]
        out.setdefault(r.scenario, []).append(t["predicted_n"] / steps)
    return {k: median(v) for k, v in out.items()}


def main(root: Path) -> None:
    runs = {d.name.split("-h200-")[1].rsplit("-", 1)[0]: RunReader(d) for d in sorted(root.iterdir()) if d.is_dir()}
    bw = dict(line.split() for line in (root / "bandwidth.txt").read_text().splitlines())
    copy_gb_s = float(bw["d2d_copy_read_plus_write_gb_s"])
    base = runs["nodraft"]
    weights = base.header.fingerprint["model"]["size_bytes"]
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
        spec = runs[label]
        ss = {r.scenario: r for r in summarize_speed(spec).rows}  # type: ignore[union-attr]
        acc = acceptance(spec)
        cal = sb[CALIBRATE_ON]
        dec_speedup = ss[CALIBRATE_ON].decode_tok_s.median / cal.decode_tok_s.median  # type: ignore[union-attr]
        c = max(0.0, acc[CALIBRATE_ON] / dec_speedup - 1.0)
        print(f"\n{label}: draft cost c = {c:.2f} target steps per verification step, calibrated on {CALIBRATE_ON} "
              f"(L = {acc[CALIBRATE_ON]:.2f}, decode speed-up {dec_speedup:.2f}x)\n")
        print("| scenario | prefill share | L | predicted (free drafter) | predicted (c) | measured e2e speed-up |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, row in sb.items():
            p = row.prefill_share or 0.0
            m = ss[name].e2e_tok_s.median / row.e2e_tok_s.median  # type: ignore[union-attr]
            free = predict_speedup(name, prefill_share=p, mean_acceptance_length=acc[name])
            fit = predict_speedup(name, prefill_share=p, mean_acceptance_length=acc[name], draft_cost_ratio=c,
                                  measured_speedup=m)
            tag = " (calibration)" if name == CALIBRATE_ON else ""
            print(f"| {name}{tag} | {p:.2f} | {acc[name]:.2f} | {free.predicted_speedup:.2f}x | "
                  f"{fit.predicted_speedup:.2f}x | {m:.2f}x |")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/h200"))
