"""Calibrate the stability warnings (changed during the run, outlier, unstable): false alarms on quiet runs,
catches on runs with a real disturbance (issue 31 item 3). Three subcommands:

    python benchmarks/stability_calibration.py simulate [--runs 20000] [--out FILE.json]
    python benchmarks/stability_calibration.py corpus RUNS_DIR... [--slice 5] [--out FILE.json]
    python benchmarks/stability_calibration.py record --runs 100 --out RUNS_DIR [--disturb neighbour|throttle
        --at speed/chat_long_context/c1/r1] [-- extra `rigbench run` options]

`simulate`: the rules (analysis/_stability.py, `judge_series`) on simulated series. False alarms per series
and per rule at n = 3..50 repetitions for normal and heavy-tailed (Student t, 4 df) spread at CVs of 2-12%,
and for the spread of real quiet runs (the standardized residuals of the quiet series found under
`--corpus`, resampled); then per default run (4 windows x decode and aggregate tok/s at 5 repetitions, each
window's CV drawn from the quiet corpus' CVs, the two series of a window correlated as in the corpus), the
figure the target is set on: no warning in at least 99 of 100 quiet default runs. Catches: a step of 20-87%
(a neighbour on the engine's cores cut the embedded rig's decode 87%, docs/honesty.md "Busy host"; a
throttled engine: half its CPU, about -50%) starting at each repetition, and a one-off value of the same
sizes, at the corpus' spread.

`corpus`: the rules exactly as a report applies them (`speed_stability`, `stability_warnings`) on recorded
run directories (any depth under each path): per run, its host verdict (quiet in every window, busy, or not
recorded) and its warnings; the false-alarm rate counts the quiet runs. `--slice N` also cuts every series
longer than N into runs of N consecutive repetitions (a run of `--repetitions 100` gives 20 runs of 5),
judged the same way. A disturbed corpus (`record --disturb`) reports which runs named the disturbed window.

`record`: `rigbench run` N times (the default run unless options follow `--`), each in a directory under
`--out`. `--disturb neighbour` starts one `while True: pass` process pinned to the engine's cores once the record
`--at` names is written (a unit id prefix; the default, after repetition 1 of chat_long_context, disturbs
repetitions 2-4 of that window); `--disturb throttle` instead stops and continues the engine's processes
(SIGSTOP / SIGCONT, `--duty` of each 100 ms running), as a CPU quota or a throttled core would. Disturbed
runs pass --allow-busy-host, so that a neighbour does not stop the run before the stability rules see it.
Record quiet runs on a quiet host only (the busy-host check excludes busy ones from the count, but a host
shared with a sibling's builds gives few quiet runs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from rigbench.analysis import MIN_REPETITIONS, SeriesStability, assess_host, detectable
from rigbench.analysis._stability import StabilityRules, judge_series, speed_stability, stability_warnings
from rigbench.records import HostConditions, SpeedBatch, SpeedRequest
from rigbench.store import RunReader

ROOT = Path(__file__).resolve().parents[1]
JUDGED = ("decode_tok_s", "aggregate_tok_s")
DEFAULT_CORPUS = [ROOT / "benchmarks" / "results", ROOT / "tests" / "golden"]


# -- the corpus -------------------------------------------------------------------------------------


def run_dirs(paths: Sequence[Path]) -> Iterator[Path]:
    for p in paths:
        for header in sorted(p.glob("**/run.json")) if p.is_dir() else []:
            yield header.parent


def _host(reader: RunReader) -> str:
    recs = [r for r in reader.records("host_conditions", HostConditions) if r.scenario.startswith("speed/")
            or "/" not in r.scenario]
    if not recs:
        return "not recorded"
    return "busy" if assess_host(recs).busy else "quiet"


def _sliced(requests: list[SpeedRequest], batches: list[SpeedBatch], size: int) -> list[list[SeriesStability]]:
    """The run cut into runs of `size` consecutive repetitions (repetitions 0-4, 5-9, ...), each judged as
    the report judges a run: `speed_stability` on that slice's records."""
    reps = sorted({b.repetition for b in batches if not b.warmup})
    out = []
    for lo in range(0, len(reps) - size + 1, size):
        keep = set(reps[lo:lo + size])
        out.append(speed_stability([r for r in requests if r.repetition in keep],
                                   [b for b in batches if b.repetition in keep]))
    return out


def corpus(paths: Sequence[Path], slice_size: int | None, disturbed_window: str | None) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    for d in run_dirs(paths):
        try:
            reader = RunReader(d)
            requests = reader.records("speed_request", SpeedRequest)
            batches = reader.records("speed_batch", SpeedBatch)
            stab = speed_stability(requests, batches)
        except Exception as e:  # a corpus may hold runs of any age: one unreadable is listed, not fatal
            runs.append({"run": str(d), "error": f"{type(e).__name__}: {e}"})
            continue
        if not stab:
            continue
        host = _host(reader)
        pieces = [("", stab)]
        if slice_size:
            pieces += [(f"#slice{i}", part) for i, part in enumerate(_sliced(requests, batches, slice_size))]
        for tag, part in pieces:
            warnings = stability_warnings(part)
            series = [s for s in part if s.judged]
            row = {"run": str(d) + tag, "host": host, "repetitions": max((len(s.values) for s in part), default=0),
                   "judged_series": len(series), "warnings": warnings,
                   "cvs": {f"{s.scenario} c={s.concurrency} {s.series}": round(s.cv, 4) for s in series
                           if s.cv is not None}}
            if disturbed_window is not None:
                row["named_disturbed_window"] = any(w.split(": ", 1)[1].startswith(disturbed_window)
                                                    for w in warnings if ": " in w)
            runs.append(row)
    judged = [r for r in runs if "error" not in r and r["judged_series"]]
    quiet = [r for r in judged if r["host"] != "busy"]

    def count(rows: list[dict[str, Any]], n: int | None = None) -> dict[str, Any]:
        sel = [r for r in rows if n is None or r["repetitions"] == n]
        warned = [r for r in sel if r["warnings"]]
        return {"runs": len(sel), "runs_with_a_warning": len(warned), "series": sum(r["judged_series"] for r in sel),
                "warned": [{"run": r["run"], "warnings": r["warnings"]} for r in warned]}

    out: dict[str, Any] = {"quiet_or_unrecorded": count(quiet), "quiet_at_5": count(quiet, 5),
                           "busy": count([r for r in judged if r["host"] == "busy"]), "runs": runs}
    if disturbed_window is not None:
        out["disturbed_window_named"] = sum(1 for r in judged if r.get("named_disturbed_window"))
        out["disturbed_runs"] = len(judged)
    return out


def corpus_residuals(paths: Sequence[Path]) -> tuple[list[float], list[float], float]:
    """From the quiet runs of 5 or more repetitions: each judged series' CV, its standardized residuals
    ((x - mean) / sd), and the correlation of decode and aggregate residuals within a window."""
    cvs: list[float] = []
    resid: list[float] = []
    pairs: list[tuple[float, float]] = []
    for d in run_dirs(paths):
        try:
            reader = RunReader(d)
            stab = speed_stability(reader.records("speed_request", SpeedRequest),
                                   reader.records("speed_batch", SpeedBatch))
        except Exception:
            continue
        if _host(reader) == "busy":
            continue
        by_window: dict[tuple[str, int], dict[str, SeriesStability]] = {}
        for s in stab:
            if s.series in JUDGED and len(s.values) >= 5 and s.cv:
                x = np.asarray(s.values)
                cvs.append(s.cv)
                z = (x - x.mean()) / x.std(ddof=1)
                resid += [float(v) for v in z]
                by_window.setdefault((s.scenario, s.concurrency), {})[s.series] = s
        for w in by_window.values():
            if len(w) == 2:
                a, b = (np.asarray(w[k].values) for k in JUDGED)
                if len(a) == len(b):
                    za, zb = (a - a.mean()) / a.std(ddof=1), (b - b.mean()) / b.std(ddof=1)
                    pairs += list(zip(za.tolist(), zb.tolist(), strict=True))
    rho = float(np.corrcoef(np.asarray(pairs).T)[0, 1]) if len(pairs) > 2 else 0.8
    return cvs, resid, rho


# -- simulation -------------------------------------------------------------------------------------


def _noise(rng: np.random.Generator, kind: str, size: int, resid: Sequence[float]) -> np.ndarray:
    """Standardized noise (mean 0, sd 1)."""
    if kind == "normal":
        return rng.normal(0.0, 1.0, size)
    if kind == "t4":
        return rng.standard_t(4, size) / math.sqrt(2.0)  # t(4) has variance 2
    return rng.choice(np.asarray(resid), size)  # "quiet": resampled from real quiet series


def _found(values: np.ndarray, rules: StabilityRules) -> tuple[bool, bool, bool]:
    f = judge_series([float(v) for v in values], rules=rules)
    return f.change is not None, bool(f.outliers), f.unstable


def simulate(runs: int, seed: int, cvs: list[float], resid: list[float], rho: float,
             rules: StabilityRules) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    shapes = ["normal", "t4"] + (["quiet"] if len(resid) >= 20 else [])
    per_series: list[dict[str, Any]] = []
    trials = max(1000, runs // 4)
    for shape in shapes:
        for n in (3, 5, 10, 20):
            for cv in (0.05, 0.08, 0.10, 0.12):
                hits = np.zeros(3)
                for _ in range(trials):
                    hits += _found(1.0 + cv * _noise(rng, shape, n, resid), rules)
                per_series.append({"noise": shape, "n": n, "cv": cv, "trials": trials,
                                   "change": hits[0] / trials, "outlier": hits[1] / trials,
                                   "unstable": hits[2] / trials})
    # the default run: 4 windows x 2 correlated series, 5 repetitions, CVs as the quiet corpus has them
    default: dict[str, Any] = {}
    pool = cvs or [0.05]
    for shape in shapes:
        warned = 0
        for _ in range(runs):
            any_hit = False
            for _w in range(4):
                cv = float(rng.choice(pool))
                common = _noise(rng, shape, 5, resid)
                own = _noise(rng, shape, 5, resid)
                dec = 1.0 + cv * common
                agg = 1.0 + cv * (rho * common + math.sqrt(max(0.0, 1 - rho * rho)) * own)
                if any(_found(dec, rules)) or any(_found(agg, rules)):
                    any_hit = True
                    break
            warned += any_hit
        default[shape] = {"runs": runs, "runs_with_a_warning": warned, "rate": warned / runs}
    # catches: a step from repetition k on, and a one-off value, at the corpus' spread (normal noise)
    catches: list[dict[str, Any]] = []
    tries = max(500, runs // 20)
    for size in (-0.2, -0.3, -0.4, -0.5, -0.7, -0.87):
        for n in (5, 10):
            for start in range(1, n):
                hit = 0
                for _ in range(tries):
                    x = 1.0 + float(rng.choice(pool)) * rng.normal(0.0, 1.0, n)
                    x[start:] *= 1 + size
                    hit += any(_found(x, rules))
                catches.append({"kind": "step", "size": size, "n": n, "from_repetition": start, "caught": hit / tries})
            hit = 0
            for _ in range(tries):
                x = 1.0 + float(rng.choice(pool)) * rng.normal(0.0, 1.0, n)
                x[int(rng.integers(n))] *= 1 + size
                hit += any(_found(x, rules))
            catches.append({"kind": "one-off", "size": size, "n": n, "caught": hit / tries})
    return {"per_series": per_series, "default_run": default, "catches": catches}


# -- recording --------------------------------------------------------------------------------------


def _wait_for_record(records: Path, prefix: str, proc: subprocess.Popen[bytes]) -> bool:
    """Until a line of records.jsonl names a unit id starting with `prefix` (or the run ends)."""
    needle = f'"unit_id":"{prefix}'
    while proc.poll() is None:
        try:
            text = records.read_text(errors="replace").replace(" ", "")
        except OSError:
            text = ""
        if needle in text:
            return True
        time.sleep(0.2)
    return False


# What a served engine's command line holds: llama-server (built, or the prebuilt's xserver.py), vLLM.
_ENGINE_WORDS = ("llama-server", "xserver", "vllm")


def _engine(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The engine's processes under the `rigbench run` process (none when it attached to an endpoint)."""
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        return []
    out = []
    for k in kids:
        with contextlib.suppress(psutil.Error):
            if any(w in " ".join(k.cmdline()[:3]) for w in _ENGINE_WORDS):
                out.append(k)
    return out


def _cores(engine: list[psutil.Process]) -> list[int]:
    """The cores the engine may run on (the run's own when no engine process is found)."""
    cpus: set[int] = set()
    for p in engine:
        with contextlib.suppress(psutil.Error):
            cpus.update(p.cpu_affinity() or [])
    return sorted(cpus) or sorted(os.sched_getaffinity(0))


def _neighbour(cores: list[int]) -> subprocess.Popen[bytes]:
    """One busy loop, pinned to `cores`."""
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        psutil.Process(p.pid).cpu_affinity(cores)
    except BaseException:
        p.kill()
        p.wait()
        raise
    return p


def _throttle(procs: list[psutil.Process], duty: float, stop: threading.Event, period_s: float = 0.1) -> None:
    while not stop.is_set():
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGSTOP)
        time.sleep(period_s * (1 - duty))
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGCONT)
        time.sleep(period_s * duty)


def record(n: int, out: Path, disturb: str | None, at: str, duty: float, extra: list[str]) -> list[dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    done: list[dict[str, Any]] = []
    for i in range(n):
        run_out = out / f"run{i:03d}"
        argv = [sys.executable, "-m", "rigbench", "run", "--out", str(run_out), *extra]
        if disturb and "--allow-busy-host" not in argv:
            argv.append("--allow-busy-host")
        t0 = time.time()
        log = (out / f"run{i:03d}.log").open("wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        started: float | None = None
        applied: dict[str, Any] = {}
        neighbour: subprocess.Popen[bytes] | None = None
        stop = threading.Event()
        thread: threading.Thread | None = None
        try:
            if disturb:
                while proc.poll() is None and not list(run_out.glob("*/records.jsonl")):
                    time.sleep(0.2)
                recs = next(iter(run_out.glob("*/records.jsonl")), None)
                if recs is not None and _wait_for_record(recs, at, proc):
                    started = time.time() - t0
                    engine = _engine(proc)
                    applied = {"engine_pids": [p.pid for p in engine]}
                    if disturb == "neighbour":
                        # on the engine's cores: elsewhere, on a host with idle cores, it would disturb nothing
                        neighbour = _neighbour(_cores(engine))
                        applied["neighbour_cores"] = psutil.Process(neighbour.pid).cpu_affinity()
                    elif engine:
                        thread = threading.Thread(target=_throttle, args=(engine, duty, stop), daemon=True)
                        thread.start()
                    else:  # nothing to throttle: said, never counted as a disturbed run that went unnoticed
                        applied["not_applied"] = "no engine process under the run (attached to an endpoint?)"
                        print(f"run {i}: throttle not applied: {applied['not_applied']}", file=sys.stderr)
            rc = proc.wait()
        finally:
            stop.set()
            if thread is not None:
                thread.join()
            for p in _engine(proc):  # never leave a stopped engine behind
                with contextlib.suppress(psutil.Error):
                    p.send_signal(signal.SIGCONT)
            if neighbour is not None:
                neighbour.kill()
                neighbour.wait()
            if proc.poll() is None:
                proc.terminate()
                proc.wait()
            log.close()
        row = {"run": i, "exit": rc, "elapsed_s": round(time.time() - t0, 1), "disturbed_at_s": started,
               **applied, "load_avg": os.getloadavg()}
        done.append(row)
        print(json.dumps(row), flush=True)
    return done


# -- report -----------------------------------------------------------------------------------------


def _print_simulation(sim: dict[str, Any]) -> None:
    print("False alarms per series (fraction of quiet series with a finding), by rule:")
    print(f"{'noise':7} {'n':>3} {'cv':>5} {'change':>8} {'outlier':>8} {'unstable':>8}")
    for r in sim["per_series"]:
        if r["n"] in (5, 10, 20):
            print(f"{r['noise']:7} {r['n']:3d} {r['cv']:5.2f} {r['change']:8.4f} {r['outlier']:8.4f} "
                  f"{r['unstable']:8.4f}")
    print("\nDefault runs (4 windows x decode and aggregate, 5 repetitions) with any warning:")
    for shape, d in sim["default_run"].items():
        print(f"  {shape:7}: {d['runs_with_a_warning']} of {d['runs']} ({d['rate']:.2%}); target < 1%")
    print("\nCatches (series with a finding) at the corpus' spread:")
    for r in sim["catches"]:
        if r["kind"] == "one-off" or r["from_repetition"] in (1, 2, 3):
            where = f"from rep {r['from_repetition']}" if r["kind"] == "step" else "one value"
            print(f"  {r['kind']:8} {r['size']:+.0%} n={r['n']:2d} {where:12}: {r['caught']:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("simulate")
    s.add_argument("--runs", type=int, default=20000)
    s.add_argument("--seed", type=int, default=12345)
    s.add_argument("--corpus", type=Path, nargs="*", default=DEFAULT_CORPUS,
                   help="run directories whose quiet series set the CVs and the resampled spread")
    s.add_argument("--out", type=Path)
    for name, default in StabilityRules()._asdict().items():  # try other constants than the shipped ones
        s.add_argument(f"--{name.replace('_', '-')}", type=float, default=default)
    c = sub.add_parser("corpus")
    c.add_argument("paths", type=Path, nargs="+")
    c.add_argument("--slice", type=int, dest="slice_size")
    c.add_argument("--disturbed-window", help="a disturbed corpus: the window the disturbance hit, e.g. "
                                              "'chat_long_context (c=1)'")
    c.add_argument("--out", type=Path)
    r = sub.add_parser("record")
    r.add_argument("--runs", type=int, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--disturb", choices=["neighbour", "throttle"])
    r.add_argument("--at", default="speed/chat_long_context/c1/r1",
                   help="start the disturbance once a record's unit id starts with this")
    r.add_argument("--duty", type=float, default=0.5, help="throttle: the engine's share of each 100 ms")
    r.add_argument("extra", nargs="*", help="options for `rigbench run`, after --")
    args = ap.parse_args()
    started = time.time()
    meta = {"host": platform.node(), "cpu_count": os.cpu_count(), "load_avg_at_start": os.getloadavg(),
            "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    given = vars(args)  # only `simulate` takes the rules' constants
    rules = StabilityRules(*(float(given.get(k, v)) for k, v in zip(StabilityRules._fields, StabilityRules(),
                                                                      strict=True)))
    result: dict[str, Any]
    if args.cmd == "simulate":
        cvs, resid, rho = corpus_residuals(args.corpus)
        sim = simulate(args.runs, args.seed, cvs, resid, rho, rules)
        result = {"benchmark": "stability_calibration simulate", **meta, "rules": rules._asdict(),
                  "corpus_series": len(cvs), "corpus_cvs": sorted(round(x, 4) for x in cvs),
                  "decode_aggregate_correlation": round(rho, 3),
                  "detectable": [detectable(n)._asdict() for n in (MIN_REPETITIONS, 4, 5, 10, 20, 50)], **sim}
        _print_simulation(sim)
    elif args.cmd == "corpus":
        res = corpus(args.paths, args.slice_size, args.disturbed_window)
        result = {"benchmark": "stability_calibration corpus", **meta, "rules": rules._asdict(), **res}
        q = res["quiet_or_unrecorded"]
        print(f"quiet (or host not recorded) runs: {q['runs']}, with a stability warning: {q['runs_with_a_warning']}"
              f" ({q['series']} judged series); at 5 repetitions: {res['quiet_at_5']['runs_with_a_warning']} of "
              f"{res['quiet_at_5']['runs']}; busy runs: {res['busy']['runs_with_a_warning']} of {res['busy']['runs']}")
        for w in q["warned"]:
            print(f"  {w['run']}:")
            for line in w["warnings"]:
                print(f"    {line}")
        if args.disturbed_window:
            print(f"disturbed window named: {res['disturbed_window_named']} of {res['disturbed_runs']} runs")
    else:
        rows = record(args.runs, args.out, args.disturb, args.at, args.duty, args.extra)
        result = {"benchmark": "stability_calibration record", **meta, "disturb": args.disturb, "at": args.at,
                  "duty": args.duty, "runs": rows}
    result["elapsed_s"] = round(time.time() - started, 1)
    if getattr(args, "out", None) and args.cmd != "record":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"results: {args.out}")
    elif args.cmd == "record":
        (args.out / "record.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
