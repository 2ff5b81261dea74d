"""Run the whole test suite N times in a row on a fresh clone, as CI does, and keep a table of the
rounds: pass or fail, duration, the host's load and steal, what failed (issue 33, item 8).

    python benchmarks/suite_rounds.py --rounds 5                  # .ci/run, 5 times, on a fresh clone of HEAD
    python benchmarks/suite_rounds.py --rounds 5 --keep-going     # do not stop at the first red round
    python benchmarks/suite_rounds.py --rounds 1 --command 'python -m pytest -q tests/unit'   # a subset

Each round runs `--command` (default `bash .ci/run`: a venv, the README's test command, with CI=true
as CI has it) in one fresh clone of the repository's committed HEAD (uncommitted changes are not in
it: the script says so), with the round's output in `WORKDIR/round-N.log` and its kept record
(tests/ci_record.py: every test's outcome and duration, failures, host figures) in
`WORKDIR/records/round-N/`. The table is rewritten after every round (`WORKDIR/rounds.md`,
`rounds.json`), so a stopped run keeps what it measured; Ctrl-C stops the round in progress and its
processes. A round takes about 25-30 minutes on the 2-core box; the caches under ~/.cache/rigbench
(llama-server build, models, vLLM venv) are shared with every other run on the machine, as in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _load_sample() -> tuple[float, list[int]] | None:
    try:
        load1 = float(Path("/proc/loadavg").read_text().split()[0])
        cpu = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return load1, cpu


def _clone(source: Path, dest: Path) -> str:
    dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=True).stdout.strip()
    if dirty:
        print(f"note: {source} has uncommitted changes; the clone holds the committed HEAD only:\n{dirty}", flush=True)
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(source), str(dest)], check=True)
    return subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def _round(n: int, clone: Path, work: Path, command: str, timeout_s: float) -> dict[str, Any]:
    record = work / "records" / f"round-{n}"
    log = work / f"round-{n}.log"
    env = {**os.environ, "CI": "true", "RIGBENCH_CI_RECORD_DIR": str(record)}
    loads: list[float] = []
    steal: list[float] = []
    cpus = os.cpu_count() or 1
    t0 = time.time()
    with log.open("w") as out:
        proc = subprocess.Popen(["bash", "-c", command], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        prev = _load_sample()
        status: int | str
        try:
            while True:
                try:
                    status = proc.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    pass
                now = _load_sample()
                if now is not None:
                    loads.append(now[0])
                    if prev is not None:
                        d = [b - a for a, b in zip(prev[1], now[1], strict=False)]
                        total = sum(d[:8])
                        if total > 0 and len(d) > 7:
                            steal.append(d[7] / total * cpus)
                    prev = now
                if time.time() - t0 > timeout_s:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=60)
                    status = "timeout"
                    break
        except KeyboardInterrupt:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            raise
    took = time.time() - t0
    summary: dict[str, Any] = {}
    if (record / "summary.json").exists():
        summary = json.loads((record / "summary.json").read_text())
    tail = log.read_text(errors="replace").rstrip().splitlines()[-1:] if log.exists() else []
    host = summary.get("host") or {}
    if not loads and host.get("load1_mean") is not None:  # a round shorter than one sample: the record's figures
        loads, steal = [host["load1_mean"], host["load1_max"]], [s for s in (host.get("steal_cores_mean"),
                                                                             host.get("steal_cores_max")) if s is not None]
    return {
        "round": n, "exit": status, "green": status == 0, "duration_s": round(took, 1),
        "pytest_s": summary.get("pytest_s"), "counts": summary.get("counts"),
        "load1_mean": round(sum(loads) / len(loads), 2) if loads else None, "load1_max": max(loads) if loads else None,
        "steal_cores_mean": round(sum(steal) / len(steal), 3) if steal else None,
        "steal_cores_max": round(max(steal), 3) if steal else None,
        "failures": summary.get("failures", {}), "slowest": (summary.get("slowest") or [])[:5],
        "last_line": tail[0] if tail else "", "log": str(log), "record": str(record),
    }


def _table(rounds: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"# {meta['command']} x {len(rounds)} on a fresh clone of {meta['commit'][:12]}", "",
             f"{meta['host']}; started {meta['started_utc']}", "",
             "| round | result | exit | duration | pytest | passed / failed / skipped | load (1-min) mean / max | steal cores mean / max |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rounds:
        c = r["counts"] or {}
        lines.append(
            f"| {r['round']} | {'green' if r['green'] else 'RED'} | {r['exit']} | {r['duration_s'] / 60:.1f} min | "
            + (f"{r['pytest_s'] / 60:.1f} min" if r["pytest_s"] else "-") + " | "
            + f"{c.get('passed', '-')} / {c.get('failed', 0) + c.get('error', 0)} / {c.get('skipped', 0)} | "
            + f"{r['load1_mean']} / {r['load1_max']} | {r['steal_cores_mean']} / {r['steal_cores_max']} |")
    green = sum(r["green"] for r in rounds)
    streak = 0
    for r in rounds:
        streak = streak + 1 if r["green"] else 0
    lines += ["", f"{green} of {len(rounds)} rounds green; green rounds in a row at the end: {streak}."]
    for r in rounds:
        for test, why in list(r["failures"].items())[:10]:
            lines.append(f"- round {r['round']}: {test}: {why}")
        if not r["green"] and not r["failures"]:
            lines.append(f"- round {r['round']}: no test failure recorded; last line of its log: {r['last_line']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="how many times to run the command (default 5)")
    ap.add_argument("--command", default="bash .ci/run", help="what one round runs in the clone (default: bash .ci/run)")
    ap.add_argument("--source", type=Path, default=REPO, help="the repository to clone (default: this one)")
    ap.add_argument("--workdir", type=Path, default=None, help="where the clone, logs and table go "
                    "(default: /tmp/rigbench-rounds-<UTC time>)")
    ap.add_argument("--keep-going", action="store_true", help="run every round even after a red one")
    ap.add_argument("--round-timeout-min", type=float, default=90.0, help="a round is stopped after this long "
                    "(default 90: CI's limit)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, not {args.rounds}")
    work = args.workdir or Path(f"/tmp/rigbench-rounds-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}")
    work.mkdir(parents=True, exist_ok=True)
    clone = work / "clone"
    if clone.exists():
        ap.error(f"{clone} exists: give another --workdir (each run takes a fresh clone)")
    commit = _clone(args.source, clone)
    cpu_model = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("model name")), "CPU model unknown")
    meta = {"command": args.command, "commit": commit, "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": f"{os.cpu_count()} CPUs ({cpu_model})", "clone": str(clone)}
    rounds: list[dict[str, Any]] = []
    print(f"clone {clone} at {commit[:12]}; {args.rounds} rounds of `{args.command}`; table: {work / 'rounds.md'}",
          flush=True)
    try:
        for n in range(1, args.rounds + 1):
            print(f"round {n}/{args.rounds} started {time.strftime('%H:%M:%S')} (log: {work / f'round-{n}.log'})",
                  flush=True)
            r = _round(n, clone, work, args.command, args.round_timeout_min * 60)
            rounds.append(r)
            (work / "rounds.json").write_text(json.dumps({"meta": meta, "rounds": rounds}, indent=1))
            (work / "rounds.md").write_text(_table(rounds, meta))
            c = r["counts"] or {}
            print(f"round {n}: {'green' if r['green'] else 'RED'} (exit {r['exit']}) in {r['duration_s'] / 60:.1f} min; "
                  f"{c.get('passed', '?')} passed, {c.get('failed', 0) + c.get('error', 0)} failed; "
                  f"load mean {r['load1_mean']}", flush=True)
            if not r["green"] and not args.keep_going:
                break
    except KeyboardInterrupt:
        print("interrupted: the table keeps the rounds that finished", flush=True)
    print(_table(rounds, meta) if rounds else "no round finished", flush=True)
    return 0 if rounds and all(r["green"] for r in rounds) and len(rounds) == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
