"""Before/after CPU per request of rate mode: two rigbench source trees measured alternately in one run.

    git archive <old-commit> src | tar -x -C /tmp/before
    python benchmarks/rate_adherence_ab.py --before /tmp/before/src --after src --rates 100,500,1000 \\
        --duration 10 --repeat 3 --json benchmarks/results/rate_adherence-ab-HOST-DATE.json

Each (rate, repeat) runs `benchmarks/rate_adherence.py` (this tree's script) once with the old tree first on
PYTHONPATH and once with the new one, in alternation, so both see the same moments of a shared machine.
CPU per request (process CPU time / requests, over the suite and over its sending window) is the figure to
compare on a busy machine; send lag only on a quiet one (the load average is kept per row).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _one(src: Path, rate: str, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "row.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src.resolve()), str(HERE.parent)])}
        subprocess.run([sys.executable, str(HERE / "rate_adherence.py"), "--rates", rate, "--duration",
                        str(args.duration), "--emulators", str(args.emulators), "--json", str(out)],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())["rows"][0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the old tree's src folder")
    ap.add_argument("--after", type=Path, required=True, help="the new tree's src folder")
    ap.add_argument("--rates", default="100,500,1000")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--emulators", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    for rate in args.rates.split(","):
        for k in range(args.repeat):
            order = [("before", args.before), ("after", args.after)]
            for tree, src in order if k % 2 == 0 else order[::-1]:
                row = {"tree": tree, "repeat": k, **_one(src, rate, args), "load_avg_1m": round(os.getloadavg()[0], 2)}
                rows.append(row)
                print(f"{tree:6} {rate:>5} req/s  CPU/request {row['cpu_per_request_us']:7.1f} us (window "
                      f"{row['window_cpu_per_request_us']:7.1f})  sent {row['sent_rps']:8.2f}/s  lag p99 "
                      f"{row['send_lag_p99_ms']:9.3f} ms  load {row['load_avg_1m']}", flush=True)
    out = {"benchmark": "rate_adherence_ab", "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="minutes"),
           "host": platform.node(), "cpus": os.cpu_count(), "before": str(args.before), "after": str(args.after),
           "duration_s": args.duration, "emulators": args.emulators, "rows": rows}
    text = json.dumps(out, indent=1)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
