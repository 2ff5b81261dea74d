"""A sweep's points against `--rate` at the same offer, on the reference emulator (issue 30 item 1).

    python benchmarks/sweep_steady.py --out benchmarks/results/sweep_steady-HOST-DATE.json

The issue's case: `rigbench run --endpoint E --sweep --slo ttft=500ms,itl=50ms` against the emulator's
defaults (TTFT 50 ms, 10 ms a token, 64 tokens: 0.68 s a request) read 29.9 req/s at 79 req/s offered, "100%
within the SLO, knee 79 req/s", where `--rate 79 --duration 20` sustained 78.1. This script runs that sweep
with rigbench's defaults (each point 30 s), then each of its rates alone (`--rate R --duration 20`, the same
schedule: a window's draws follow its rate), and reports per rate: offered, the sweep point's throughput
(steady interval) and its whole-window figure (what the sweep showed before), the `--rate` run's throughput,
their ratio, each window's steady state, and the knee as reported. A second emulator given a capacity
(`--slots`, default 40: about 62 req/s) is offered a rate list across it, to show the rate over capacity found.

Every run is attached to an emulator in its own process on this machine, so the figures are the client's and
the host's as much as the server's: run it on a quiet host (the host conditions of every window are in the
runs, and summarised here as `busy_windows`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rigbench.analysis import analyze_run, summarize_load
from rigbench.records import HostConditions
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

ISSUE = EmulatorScript()  # TTFT 50 ms, ITL 10 ms, 64 tokens: the emulator's defaults, as in the issue


def _rigbench(*args: str, out: Path) -> Path:
    cmd = [sys.executable, "-m", "rigbench", "run", "--no-sanity", "--allow-untrusted", "--allow-busy-host", *args,
           "--out", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "160"})
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {res.returncode}:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    (run,) = sorted(p for p in out.iterdir() if p.is_dir())[-1:]
    return run


def _busy(run: Path) -> list[str]:
    from rigbench.analysis import assess_host

    recs = RunReader(run).records("host_conditions", HostConditions)
    verdict = assess_host(recs)
    return [row.cause or r.scenario for r, row in zip(recs, verdict.rows, strict=True) if row.busy]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="where the JSON result goes")
    ap.add_argument("--runs", type=Path, default=Path("/tmp/sweep_steady"), help="where the run directories go")
    ap.add_argument("--alone-s", type=float, default=20.0, help="--duration of each rate run alone (default 20)")
    ap.add_argument("--slots", type=int, default=40, help="the capped emulator's slots (default 40)")
    a = ap.parse_args()
    t0 = time.time()
    result: dict[str, Any] = {"host": platform.node(), "cpus": os.cpu_count(), "started": time.strftime("%Y-%m-%d %H:%M"),
                              "load_before": os.getloadavg()}
    with EmulatorProcess(ISSUE) as emu:
        sweep = _rigbench("--endpoint", emu.url, "--sweep", "--slo", "ttft=500ms,itl=50ms", out=a.runs / "sweep")
        s = summarize_load(RunReader(sweep))
        assert s is not None
        points = []
        for w in s.rates:
            rate = w.offered_rate_rps
            assert rate is not None
            alone = summarize_load(RunReader(_rigbench("--endpoint", emu.url, "--rate", repr(rate), "--duration",
                                                       str(a.alone_s), out=a.runs / f"alone-{w.window}")))
            assert alone is not None
            one = alone.windows[0]
            points.append({"window": w.window, "offered_rps": rate, "sweep_rps": w.throughput_rps,
                           "sweep_whole_window_rps": w.throughput_window_rps,
                           "sweep_state": w.steady.state if w.steady else None,
                           "alone_rps": one.throughput_rps, "alone_state": one.steady.state if one.steady else None,
                           "ratio": w.throughput_rps / one.throughput_rps})
        result["issue_sweep"] = {"saturation_rps": s.saturation.throughput_rps if s.saturation else None,
                                 "knee": s.knee.model_dump() if s.knee else None, "points": points,
                                 "warnings": analyze_run(RunReader(sweep)).warnings, "busy_windows": _busy(sweep)}
    capped = EmulatorScript(ttft=Delay(mean_ms=200), itl=Delay(mean_ms=30), output_tokens=16, slots=a.slots)
    with EmulatorProcess(capped) as emu:
        run = _rigbench("--endpoint", emu.url, "--rate", "20,40,80,120", "--arrival", "constant", "--duration", "10",
                        "--output-tokens", "16", "--slo", "ttft=1s", out=a.runs / "capped")
        s = summarize_load(RunReader(run))
        assert s is not None
        result["capped"] = {"slots": a.slots, "capacity_rps": a.slots / (0.2 + 15 * 0.03),
                            "windows": [{"offered_rps": w.offered_rate_rps, "throughput_rps": w.throughput_rps,
                                         "state": w.steady.state if w.steady else None} for w in s.rates],
                            "knee": s.knee.model_dump() if s.knee else None,
                            "capacity": s.capacity.model_dump() if s.capacity else None, "busy_windows": _busy(run)}
    result["load_after"] = os.getloadavg()
    result["elapsed_s"] = time.time() - t0
    a.out.write_text(json.dumps(result, indent=1))
    for p in result["issue_sweep"]["points"]:
        print(f"{p['window']}: offered {p['offered_rps']:.3g}, sweep {p['sweep_rps']:.3g} ({p['sweep_state']}; whole "
              f"window {p['sweep_whole_window_rps']:.3g}), alone {p['alone_rps']:.3g} ({p['alone_state']}): "
              f"ratio {p['ratio']:.3f}")
    for w in result["capped"]["windows"]:
        print(f"capped: offered {w['offered_rps']:.3g}: {w['throughput_rps']:.3g} req/s, {w['state']}")
    print(f"knee {result['issue_sweep']['knee']}; capped knee {result['capped']['knee']}, sustained "
          f"{result['capped']['capacity']}; {result['elapsed_s']:.0f} s; written {a.out}")


if __name__ == "__main__":
    main()
