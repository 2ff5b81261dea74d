"""rigbench against its peers (GuideLLM, AIPerf, `vllm bench serve`), each tool in its own mode, on the same server.

    python benchmarks/peers.py --cases all --rounds 3 --json out.json          # every mode, the emulator
    python benchmarks/peers.py --cases rate,stall --rounds 2 --json out.json   # groups: rate stall modes cpu
    python benchmarks/peers.py --cases all --lanes 4 --rounds 2 --json out.json  # cases in 4 pinned lanes
    python benchmarks/peers.py --target llama --cases rate-poisson,trace --json out.json  # real llama-server
    python benchmarks/peers.py --streams 1,64,512 --rounds 3 --json out.json  # closed loop (issue 15 runs)
    python benchmarks/peers.py --rates 5,50,200 --arrival poisson --json out.json  # open loop (issue 20 runs)

Cases (benchmarks/peers_tools.py: CASES, and each tool's command line for each): rate with constant and
Poisson arrivals, with and without a concurrency cap; a 2 s server stall mid-run behind a StallProxy,
capped and uncapped (coordinated omission); goodput under one SLO; replay of a Mooncake-format trace;
multi-turn sessions; a saturation sweep on a server with a capacity; client CPU at one slow stream, 64
streams and 1,000 req/s. A tool that lacks a mode gets a row saying so, never a run of another mode.

Truth (benchmarks/peers_truth.py): `--target emulator`, the reference emulator in its own process,
which stamps each request's receipt and each chunk's write on CLOCK_MONOTONIC (behind the stall
proxy, a chunk written during the stall is delivered at its end); `--target llama`, the embedded
llama-server, whose log prints each request's own prefill and decode time. One tool at a time on a
fresh server, the order rotated every round; per run the host's load average and the CPU that
processes other than the tool and the server used (host conditions). Client CPU is the tool's whole
process tree (psutil, every 20 ms) between the server's first receipt and last write.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers_read
import peers_truth as pt
from peers_tools import (
    CASES,
    GROUPS,
    HF_HOME,
    INSTALL,
    PEERS,
    TOKENIZER,
    TOOLS,
    VERSIONS,
    Case,
    Server,
    aiperf_tokenizer_cache,
    command,
    peer_bin,
    requests_of,
    target_root,
    trace_lines,
)

from rigbench.testing import Delay, EmulatorProcess, EmulatorScript


def _q(xs: list[float], p: float) -> float | None:
    return float(np.percentile(xs, p)) if xs else None


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1e3, 3)


def _err(tool: list[float], truth: list[float]) -> dict[str, float | None]:
    """The tool's p50 (p99) minus the truth's p50 (p99), ms."""
    out: dict[str, float | None] = {}
    for p in (50, 99):
        a, b = _q(tool, p), _q(truth, p)
        out[f"p{p}_ms"] = None if a is None or b is None else round((a - b) * 1e3, 3)
    return out


def _wall_minus_mono_ns() -> int:
    """time.time_ns() - perf_counter_ns(), from the closest of a few paired readings."""
    best: tuple[int, int] | None = None
    for _ in range(20):
        a = time.perf_counter_ns()
        w = time.time_ns()
        b = time.perf_counter_ns()
        if best is None or b - a < best[0]:
            best = (b - a, w - (a + b) // 2)
    assert best is not None
    return best[1]


def stamp_err(rep: peers_read.Reported, truth: pt.Truth, wall_offset_ns: int) -> dict[str, Any]:
    """Each first-token stamp minus the truth's delivery of that token, ms: the TTFT error with the
    tool's own send as the start. Paired by the server's response id where the tool kept it (rigbench,
    GuideLLM), else in time order, which can only understate an error larger than the requests' spacing."""
    mono = rep.first_mono_ns or [w - wall_offset_ns for w in rep.first_wall_ns]
    if not mono or not truth.reqs:
        return {"p50_ms": None, "p99_ms": None, "n": 0, "paired": None}
    by_id = truth.by_id()
    ids = rep.ids if len(rep.ids) == len(mono) else []
    if ids and all(i in by_id for i in ids):
        d = np.array([m - by_id[i].first_ns for m, i in zip(mono, ids, strict=True)], dtype=np.float64)  # type: ignore[index]
        paired = "response id"
    elif len(mono) == len(truth.reqs):
        d = np.array(sorted(mono), dtype=np.float64) - np.array(sorted(r.first_ns for r in truth.reqs), dtype=np.float64)
        paired = "time order"
    else:
        return {"p50_ms": None, "p99_ms": None, "n": len(mono), "paired": "counts differ"}
    return {"p50_ms": round(float(np.percentile(np.abs(d), 50)) / 1e6, 3),
            "p99_ms": round(float(np.percentile(np.abs(d), 99)) / 1e6, 3),
            "min_ms": round(float(d.min()) / 1e6, 3), "n": len(d), "paired": paired}


# --- servers ---


def _script(s: Server) -> EmulatorScript:
    fields: dict[str, Any] = {"ttft": Delay(dist="uniform", mean_ms=s.ttft_ms, jitter_ms=s.ttft_jitter_ms),
                              "itl": Delay(dist="uniform", mean_ms=s.itl_ms, jitter_ms=s.itl_jitter_ms),
                              "output_tokens": s.output_tokens, "model": "emulated-model"}
    if s.slots is not None:
        if "slots" not in EmulatorScript.model_fields:
            raise NotImplementedError("this rigbench's emulator has no `slots` (a server capacity), which the case needs")
        fields["slots"] = s.slots
    return EmulatorScript(**fields)


class Stall:
    """A StallProxy in its own process (python -m rigbench.testing._stall), pinned like the server."""

    def __init__(self, upstream: str, stall_s: float, after: int, cpus: set[int] | None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-W", "ignore::RuntimeWarning", "-m", "rigbench.testing._stall",
                                      "--upstream", upstream,
                                      "--stall-s", str(stall_s), "--after", str(after)],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("listening "):
            self.proc.kill()
            raise SystemExit(f"the stall proxy did not start: {line!r}")
        if cpus:
            os.sched_setaffinity(self.proc.pid, cpus)
        self.url = line.split()[1].removesuffix("/v1")

    def stop(self) -> tuple[tuple[int, int] | None, list[int]]:
        """The stall's window (None: the run never reached its request), and when each chat request
        reached the proxy (the client's send, as the server would have read it)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        window, arrived = None, []
        for ln in (out or "").splitlines():
            if ln.startswith("stall "):
                _, a, b = ln.split()
                window = (int(a), int(b))
            elif ln.startswith("arrivals"):
                arrived = [int(x) for x in ln.split()[1:]]
        return window, arrived


def _env(tool: str) -> dict[str, str]:
    # No hub here: the Hugging Face libraries offline; AIPerf reads the tokenizer from a cache of its own
    # (peers_tools.aiperf_tokenizer_cache: its offline mode takes a tokenizer name as a hub repo id).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    if tool == "aiperf":
        env["HF_HOME"] = str(HF_HOME)
    if tool != "rigbench":  # a peer sees its own packages only, never rigbench's PYTHONPATH
        exe = peer_bin(tool)
        root = target_root(exe) if exe else None
        env.pop("PYTHONPATH", None)
        if root is not None:
            env["PYTHONPATH"] = str(root)
    return env


class Host:
    """Who else used the host's CPU during a run: all busy CPU minus the tool's tree and the server's."""

    def __init__(self) -> None:
        self.t0, self.c0, self.load0 = time.perf_counter(), psutil.cpu_times(), os.getloadavg()[0]

    def stop(self, own_cpu_s: float) -> dict[str, Any]:
        c1, wall = psutil.cpu_times(), time.perf_counter() - self.t0

        def busy(c: Any) -> float:
            return float(sum(c) - c.idle - getattr(c, "iowait", 0.0) - getattr(c, "steal", 0.0))

        others = busy(c1) - busy(self.c0) - own_cpu_s
        steal = getattr(c1, "steal", 0.0) - getattr(self.c0, "steal", 0.0)
        return {"loadavg_1m": [round(self.load0, 2), round(os.getloadavg()[0], 2)], "cores": os.cpu_count(),
                "others_cores": round(max(others, 0.0) / wall, 3), "steal_cores": round(steal / wall, 3)}


def _proc_cpu(pid: int | None) -> float:
    try:
        c = psutil.Process(pid).cpu_times() if pid else None
    except psutil.Error:
        return 0.0
    return float(c.user + c.system) if c else 0.0


# --- one run: one tool, one case, a fresh server ---


def run_one(tool: str, case: Case, args: argparse.Namespace, llama: dict[str, Any] | None,
            cpus: tuple[set[int], set[int]] | None) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix=f"peers-{tool}-"))
    row: dict[str, Any] = {"case": case.name, "mode": case.mode, "tool": tool, "target": args.target,
                           "requests_asked": requests_of(case)}
    emu = stall = None
    truth_dump: dict[str, Any] | None = None
    client_cpus, server_cpus = cpus or (None, None)
    try:
        if args.target == "emulator":
            try:
                script = _script(case.server)
            except NotImplementedError as e:
                row["not_run"] = str(e)
                return row
            emu = EmulatorProcess(script, uvloop=True).start()
            if server_cpus:
                os.sched_setaffinity(emu.pid or 0, server_cpus)
            url, model = emu.root, "emulated-model"
        else:
            assert llama is not None
            url, model = llama["url"], llama["model"]
        if case.stall_s:
            stall = Stall(url, case.stall_s, case.stall_after, server_cpus)
            url = stall.url
        cmd = command(tool, case, url, model, out)
        if isinstance(cmd, str):
            row["not_run"] = cmd
            return row
        watch = pt.LogWatch(llama["log"]) if llama is not None else None
        host = Host()
        emu_cpu0 = _proc_cpu(emu.pid if emu else (llama["proc"].pid if llama else None))
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(tool),
                                start_new_session=True,
                                preexec_fn=(lambda: os.sched_setaffinity(0, client_cpus)) if client_cpus else None)
        sampler = pt.CpuSampler(proc.pid)
        try:
            log, _ = proc.communicate(timeout=args.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            log, _ = proc.communicate()
            log = (log or "") + f"\n[peers.py] killed after {args.timeout_s} s"
        except BaseException:  # SIGTERM (main makes it SystemExit) or ^C: the tool's own session goes too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        sampler.stop()
        row["wall_s"] = round(time.perf_counter() - t0, 2)
        total_cpu = sampler.samples[-1][1] if sampler.samples else 0.0
        server_cpu = _proc_cpu(emu.pid if emu else (llama["proc"].pid if llama else None)) - emu_cpu0
        row["host"] = host.stop(total_cpu + server_cpu)
        window, arrived = stall.stop() if stall else (None, [])
        if emu is not None:
            min_tokens = min(case.output_tokens, case.server.output_tokens) if case.mode != "trace" else 2
            truth = pt.emulator_truth(emu, min_tokens=min_tokens, stall_ns=window, arrived_ns=arrived)
        else:
            truth = pt.llama_truth(watch.stop() if watch else [], min_tokens=case.output_tokens if case.mode != "trace" else 2)
        truth_dump = {"reqs": [asdict(r) for r in truth.reqs], "stall_ns": window, "window_ns": truth.window_ns}
        row["rc"] = proc.returncode
        if proc.returncode != 0:
            row["error"] = (log or "")[-2000:]
            return row
        try:
            rep = peers_read.read(tool, out)
        except (OSError, ValueError, KeyError, TypeError) as e:
            row["error"] = f"could not read {tool}'s output: {e!r}; log tail: {(log or '')[-800:]}"
            return row
        win_cpu = sampler.cpu_in(truth.window_ns) if truth.window_ns and sampler.samples else None
        row.update(_figures(tool, case, rep, truth, args))
        row.update({"cpu_total_s": round(total_cpu, 3), "cpu_window_s": None if win_cpu is None else round(win_cpu, 3),
                    "window_s": None if not truth.window_ns else round((truth.window_ns[1] - truth.window_ns[0]) / 1e9, 3)})
        if win_cpu is not None and truth.reqs:
            row["cpu_ms_per_request"] = round(win_cpu / len(truth.reqs) * 1e3, 3)
            row["cpu_us_per_event"] = round(win_cpu / truth.events * 1e6, 2)
        return row
    finally:
        if stall is not None and stall.proc.poll() is None:
            stall.proc.kill()
            stall.proc.wait()
        if emu is not None:
            emu.stop()
        if args.keep:  # the tool's own output and the truth, to re-read later
            dest = Path(args.keep) / f"{args.target}-{case.name}-{tool}-{time.time_ns()}"
            shutil.copytree(out, dest, dirs_exist_ok=True)
            if truth_dump is not None:
                (dest / "truth.json").write_text(json.dumps(truth_dump))
        shutil.rmtree(out, ignore_errors=True)


# A session's first turn is its new message alone; a later turn resends that message, a reply and a new
# one, so at least twice the shortest message. A prompt under 1.5 x the shortest is a first turn, as long
# as the messages asked for have one length (they vary by how each tool's text splits into the emulator's
# words: 42-59 for AIPerf's 64 tokens, seen).
FIRST_TURN_SPAN = 1.5


def _figures(tool: str, case: Case, rep: peers_read.Reported, truth: pt.Truth, args: argparse.Namespace) -> dict[str, Any]:
    """What the tool reported against the truth, for the case's mode."""
    t_ttft = [r.ttft_s for r in truth.reqs]
    t_itl = [x for x in (r.itl_mean_s for r in truth.reqs) if x is not None]
    f: dict[str, Any] = {
        "requests_ok": rep.ok, "requests_failed": rep.failed, "requests_truth": len(truth.reqs),
        "probes": truth.probes, "events_truth": truth.events,
        "ttft_err": _err(rep.ttft_s, t_ttft),
        "itl_err": _err(rep.itl_mean_s, t_itl),
        "itl_definition": "TPOT per request" if tool == "vllm" else "per-request mean",
        "tool_ttft_p50_ms": _ms(_q(rep.ttft_s, 50)), "tool_ttft_p99_ms": _ms(_q(rep.ttft_s, 99)),
        "truth_ttft_p50_ms": _ms(_q(t_ttft, 50)), "truth_ttft_p99_ms": _ms(_q(t_ttft, 99)),
        "prompt_tokens_tool_median": statistics.median(rep.prompt_tokens) if rep.prompt_tokens else None,
        "prompt_tokens_server_median": statistics.median(r.prompt_tokens for r in truth.reqs) if truth.reqs else None,
        "notes": rep.notes + truth.notes,
    }
    if args.target == "emulator":
        f["stamp_err"] = stamp_err(rep, truth, _wall_minus_mono_ns())
    received = [r.received_ns for r in truth.reqs]
    if case.mode in ("rate", "goodput", "sessions") and args.target == "emulator":
        f["arrivals"] = pt.arrivals(received, case.rate)
        f["server_in_flight_max"] = pt.server_concurrency_max(truth)
    if case.mode == "rate" and case.arrival == "constant" and args.target == "emulator":
        resp = pt.response_ttft_s(truth, case.rate)  # what a user whose request was due saw
        f["truth_response_ttft_p50_ms"], f["truth_response_ttft_p99_ms"] = _ms(_q(resp, 50)), _ms(_q(resp, 99))
        if rep.ttft_response_s:
            f["tool_response_ttft_p50_ms"] = _ms(_q(rep.ttft_response_s, 50))
            f["tool_response_ttft_p99_ms"] = _ms(_q(rep.ttft_response_s, 99))
        if rep.e2e_scheduled_s:
            f["tool_e2e_from_scheduled_p99_ms"] = _ms(_q(rep.e2e_scheduled_s, 99))
        f["stall_seen"] = truth.stall_ns is not None
    if case.mode == "goodput":  # the SLO judged on the truth from the receipt (service) and from the due time
        span = truth.window_ns and (truth.window_ns[1] - truth.window_ns[0]) / 1e9
        met = [pt.slo_met(r.ttft_s, r.itl_mean_s, (r.last_ns - r.received_ns) / 1e9, case.slo) for r in truth.reqs]
        f["truth_attainment"] = round(sum(met) / len(met), 4) if met else None
        f["truth_goodput_rps"] = round(sum(met) / span, 3) if met and span else None
        if case.arrival == "constant" and args.target == "emulator":
            reqs = sorted(truth.reqs, key=lambda r: r.received_ns)
            due = pt.intended_constant([r.received_ns for r in reqs], case.rate)
            met = [pt.slo_met((r.first_ns - d) / 1e9, r.itl_mean_s, (r.last_ns - d) / 1e9, case.slo)
                   for r, d in zip(reqs, due, strict=True)]
            f["truth_response_attainment"] = round(sum(met) / len(met), 4) if met else None
        f["tool_attainment"] = rep.attainment
        f["tool_goodput_rps"] = None if rep.goodput_rps is None else round(rep.goodput_rps, 3)
    if case.mode == "trace" and args.target == "emulator":
        lines = trace_lines(case.trace)
        f.update(pt.trace_adherence(received, lines))
        want = [ln["output_length"] for ln in lines]
        f["output_lengths_exact"] = f"{pt.lengths_met([r.output_tokens for r in truth.reqs], want)}/{len(want)}"
    # a first turn carries no history: the shortest prompts (the emulator's counts; llama-server's log counts
    # only the tokens it evaluated, and a later turn's history comes from its prompt cache)
    if case.mode == "sessions" and truth.reqs and args.target == "emulator":
        words = sorted(r.prompt_tokens for r in truth.reqs)
        f["server_prompt_tokens_min_median_max"] = [words[0], statistics.median(words), words[-1]]
        firsts = sorted(r.received_ns for r in truth.reqs if r.prompt_tokens < FIRST_TURN_SPAN * words[0])
        f["sessions_seen"] = len(firsts)
        f["turns_per_session"] = round(len(truth.reqs) / len(firsts), 2)
        if len(firsts) > 2:
            f["session_starts_per_s"] = round((len(firsts) - 1) / ((firsts[-1] - firsts[0]) / 1e9), 3)
    if case.mode == "sweep":
        f["tool_saturation_rps"] = None if rep.saturation_rps is None else round(rep.saturation_rps, 3)
        # receipts are needed (the emulator's): llama-server's log has durations only
        f["truth_capacity_rps"] = (pt.capacity_rps(truth, case.server.slots)
                                   if case.server.slots and args.target == "emulator" else None)
        f["points"] = rep.points
    return f


# --- the real llama-server ---


def _start_llama(args: argparse.Namespace) -> dict[str, Any]:
    from rigbench.rig import EMBEDDED_MODEL
    from rigbench.rig.engines._llamacpp._build import find_llama_server

    found = find_llama_server()  # PATH first, then rigbench's cached build
    exe = args.llama_server or (str(found) if found else None)
    model = args.model_file or str(EMBEDDED_MODEL.resolve())
    if not exe or not model:
        raise SystemExit(f"llama target: llama-server ({exe}) or the SmolLM2 GGUF ({model}) not found; "
                         "run `rigbench setup` (or pass --llama-server / --model-file)")
    log = Path(tempfile.mkdtemp(prefix="peers-llama-")) / "server.log"
    cmd = [exe, "-m", model, "--host", "127.0.0.1", "--port", str(args.port), "-c", "8192", "-np", "4",
           "--alias", "SmolLM2-135M-Instruct", "--log-file", str(log)]
    cmd += ["--threads", str(args.llama_threads)] if args.llama_threads else []
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{args.port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        raise SystemExit(f"llama-server did not become healthy; command: {' '.join(cmd)}; log: {log}")
    return {"proc": proc, "url": url, "model": "SmolLM2-135M-Instruct", "log": log, "cmd": cmd}


# --- cases, lanes, rounds ---


def _cases(args: argparse.Namespace) -> list[Case]:
    if args.streams:
        return [replace(CASES["cpu-64"], name=f"streams-{c}", doc=f"{c} concurrent streams", streams=int(c),
                        requests=10 if int(c) == 1 else int(c) * (2 if int(c) <= 64 else 1))
                for c in args.streams.split(",")]
    if args.rates:
        return [replace(CASES["rate-poisson"], name=f"rate-{args.arrival}-{r}", rate=float(r), arrival=args.arrival,
                        requests=args.requests or 200, doc=f"{r} req/s, {args.arrival}, no cap")
                for r in args.rates.split(",")]
    names: list[str] = []
    for n in args.cases.split(","):
        names += GROUPS.get(n, [n])
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; cases: {sorted(CASES)}; groups: {sorted(GROUPS)}")
    cases = [CASES[n] for n in dict.fromkeys(names)]
    if args.requests:
        cases = [replace(c, requests=args.requests) if c.mode in ("rate", "goodput", "streams") else c for c in cases]
    return cases


def _cpu_sets(spec: str) -> tuple[set[int], set[int]] | None:
    """"a-b": the client's cores and the server's (the last of them; the only one when a == b)."""
    if not spec:
        return None
    a, _, b = spec.partition("-")
    cores = list(range(int(a), int(b or a) + 1))
    return (set(cores[:-1]) or set(cores), {cores[-1]})


def _lanes(args: argparse.Namespace, cases: list[Case]) -> dict[str, Any]:
    """Run the cases in `--lanes` processes of this script, each pinned to its own cores, and merge."""
    n = args.lanes
    per = (os.cpu_count() or 1) // n
    if per < 2:
        raise SystemExit(f"--lanes {n} needs at least 2 cores per lane; this machine has {os.cpu_count()}")
    lanes = [cases[i::n] for i in range(n)]
    procs = []
    # each lane's JSON beside --json, written as it goes: a run cut short keeps what it measured
    tmp = Path(args.json).parent if args.json else Path(tempfile.mkdtemp(prefix="peers-lanes-"))
    stem = Path(args.json).name if args.json else "peers"
    logs = contextlib.ExitStack()
    for i, lane in enumerate(lanes):
        if not lane:
            continue
        argv = [sys.executable, __file__, "--cases", ",".join(c.name for c in lane), "--cpus",
                f"{i * per}-{(i + 1) * per - 1}", "--json", str(tmp / f"{stem}.lane{i}.json"), "--rounds", str(args.rounds),
                "--tools", args.tools, "--target", args.target, "--timeout-s", str(args.timeout_s),
                "--deadline-s", str(args.deadline_s),
                "--port", str(args.port + i)]
        argv += ["--keep", args.keep] if args.keep else []
        argv += ["--requests", str(args.requests)] if args.requests else []
        log = logs.enter_context((tmp / f"{stem}.lane{i}.log").open("w"))
        procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))
    with logs:
        try:
            for p in procs:
                p.wait()
        except BaseException:  # each lane cleans up its own tool and server on SIGTERM
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait()
            raise
    runs: list[dict[str, Any]] = []
    for f in sorted(tmp.glob(f"{stem}.lane*.json")):
        runs += json.loads(f.read_text())["runs"]
    tails = {f.name: f.read_text()[-3000:] for f in sorted(tmp.glob(f"{stem}.lane*.log"))}
    return {"runs": runs, "lane_logs": tails}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="all", help=f"cases or groups, comma-separated; groups: {', '.join(GROUPS)}; "
                                                  f"cases: {', '.join(CASES)}")
    p.add_argument("--target", choices=["emulator", "llama"], default="emulator")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--lanes", type=int, default=1, help="run the cases in this many pinned lanes at once "
                                                        "(cores split evenly; each lane a client set and a server core)")
    p.add_argument("--cpus", default="", help="(a lane) cores FIRST-LAST: the tools on all but the last, the server on it")
    p.add_argument("--timeout-s", type=int, default=600, help="one tool's run at most")
    p.add_argument("--deadline-s", type=int, default=0, help="start no run that would end after this many seconds "
                                                         "(judged by the longest run so far); it gets a row saying so")
    p.add_argument("--llama-server", default="")
    p.add_argument("--model-file", default="")
    p.add_argument("--port", type=int, default=18431)
    p.add_argument("--llama-threads", type=int, default=0, help="llama-server --threads (default: its own)")
    p.add_argument("--requests", type=int, default=0, help="requests per run of rate, goodput and streams cases")
    p.add_argument("--streams", default="", help="closed-loop cases at these concurrencies instead of --cases")
    p.add_argument("--rates", default="", help="open-loop cases at these rates (req/s) instead of --cases")
    p.add_argument("--arrival", choices=["poisson", "constant"], default="poisson", help="with --rates")
    p.add_argument("--json", default="")
    p.add_argument("--keep", default="", help="keep each tool's output and the truth under this directory")
    args = p.parse_args()
    # `timeout` (benchmarks/gpu/peers.sh) ends a run with SIGTERM: unwind, so that the tool's session, the
    # emulator, the stall proxy and llama-server (each in its own session) are stopped, not left running
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cases = _cases(args)
    tools = [t for t in args.tools.split(",") if t]
    missing = {t: f"not installed (looked under {PEERS}; " + INSTALL[t] + ")" for t in tools
               if t != "rigbench" and peer_bin(t) is None}
    if not TOKENIZER.exists() and any(t != "rigbench" for t in tools):
        raise SystemExit(f"no tokenizer at {TOKENIZER}: the peers need one to size prompts "
                         "(benchmarks/peers_tokenizer.py; docs/benchmarks.md)")
    results: dict[str, Any] = {
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, "
                   f"{(platform.processor() or _cpu_model())}",
        "python": platform.python_version(), "missing": missing,
        "versions": {t: f"{VERSIONS[t]} at {peer_bin(t)}" for t in tools if t != "rigbench" and t not in missing},
        "cases": {c.name: {**asdict(c), "server": asdict(c.server)} for c in cases},
        "runs": [],
    }
    for t, why in missing.items():
        print(f"{t}: {why} (skipped)", flush=True)
    tools = [t for t in tools if t not in missing]
    if "aiperf" in tools:
        aiperf_tokenizer_cache()
    if args.lanes > 1:
        results.update(_lanes(args, cases))
    else:
        cpus = _cpu_sets(args.cpus)
        llama = _start_llama(args) if args.target == "llama" else None
        t0, longest = time.perf_counter(), 0.0
        try:
            for rnd in range(args.rounds):
                order = tools[rnd % len(tools):] + tools[: rnd % len(tools)]
                for case in cases:
                    for tool in order:
                        left = args.deadline_s - (time.perf_counter() - t0) if args.deadline_s else None
                        if left is not None and left < longest:  # it would not finish in time: say so
                            row = {"case": case.name, "mode": case.mode, "tool": tool, "round": rnd,
                                   "not_run": f"--deadline-s {args.deadline_s}: {left:.0f} s left, runs took up to "
                                              f"{longest:.0f} s"}
                            results["runs"].append(row)
                            continue
                        started = time.perf_counter()
                        row = run_one(tool, case, args, llama, cpus)
                        longest = max(longest, time.perf_counter() - started)
                        row["round"] = rnd
                        results["runs"].append(row)
                        print(json.dumps(row), flush=True)
                        if args.json:
                            Path(args.json).write_text(json.dumps(results, indent=1))
        finally:
            if llama is not None:
                llama["proc"].terminate()
                llama["proc"].wait(timeout=30)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(tables(results))


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                return ln.split(":", 1)[1].strip()
    return "unknown CPU"


# --- tables (docs/benchmarks.md takes them as printed) ---


def _get(r: dict[str, Any], key: str) -> Any:
    v: Any = r
    for k in key.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    return v


def _med(rs: list[dict[str, Any]], key: str, fmt: str = "{:.2f}") -> str:
    vals = [_get(r, key) for r in rs]
    xs = [float(v) for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not xs:
        texts = sorted({str(v) for v in vals if isinstance(v, str)})
        return ", ".join(texts) if texts else "–"
    m = statistics.median(xs)
    return fmt.format(m) + (f" [{fmt.format(min(xs))}–{fmt.format(max(xs))}]" if len(xs) > 1 and min(xs) != max(xs) else "")


COLUMNS: dict[str, list[tuple[str, str]]] = {
    "streams": [("stamp err p50 / p99 ms", "stamp_err.p50_ms|stamp_err.p99_ms"),
                ("TTFT err p50 / p99 ms", "ttft_err.p50_ms|ttft_err.p99_ms"),
                ("ITL err p50 / p99 ms", "itl_err.p50_ms|itl_err.p99_ms"),
                ("CPU ms/request", "cpu_ms_per_request"), ("CPU µs/event", "cpu_us_per_event")],
    "rate": [("server req/s (vs offered)", "arrivals.server_received_rps|arrivals.achieved_vs_offered"),
             ("gap CV", "arrivals.gap_cv"), ("in flight max", "server_in_flight_max"),
             ("TTFT p50 / p99 ms: tool", "tool_ttft_p50_ms|tool_ttft_p99_ms"),
             ("truth from receipt", "truth_ttft_p50_ms|truth_ttft_p99_ms"),
             ("truth from intended start", "truth_response_ttft_p50_ms|truth_response_ttft_p99_ms"),
             ("tool from intended start", "tool_response_ttft_p50_ms|tool_response_ttft_p99_ms"),
             ("stamp err p50 / p99 ms", "stamp_err.p50_ms|stamp_err.p99_ms"),
             ("CPU ms/request", "cpu_ms_per_request")],
    "goodput": [("attainment: tool / truth from receipt / from due time",
                 "tool_attainment|truth_attainment|truth_response_attainment"),
                ("goodput req/s: tool / truth", "tool_goodput_rps|truth_goodput_rps"),
                ("TTFT err p50 / p99 ms", "ttft_err.p50_ms|ttft_err.p99_ms"),
                ("ITL err p50 / p99 ms", "itl_err.p50_ms|itl_err.p99_ms"), ("CPU ms/request", "cpu_ms_per_request")],
    "trace": [("arrival err p50 / p99 / max ms", "arrival_err_p50_ms|arrival_err_p99_ms|arrival_err_max_ms"),
              ("median offset / spread p99 ms", "arrival_offset_ms|arrival_spread_p99_ms"),
              ("output lengths exact", "output_lengths_exact"),
              ("TTFT err p50 / p99 ms", "ttft_err.p50_ms|ttft_err.p99_ms"),
              ("stamp err p50 / p99 ms", "stamp_err.p50_ms|stamp_err.p99_ms"), ("CPU ms/request", "cpu_ms_per_request")],
    "sessions": [("sessions seen / turns each", "sessions_seen|turns_per_session"),
                 ("session starts/s", "session_starts_per_s"), ("server req/s", "arrivals.server_received_rps"),
                 ("TTFT err p50 / p99 ms", "ttft_err.p50_ms|ttft_err.p99_ms"),
                 ("ITL err p50 / p99 ms", "itl_err.p50_ms|itl_err.p99_ms"), ("CPU ms/request", "cpu_ms_per_request")],
    "sweep": [("saturation req/s: tool", "tool_saturation_rps"), ("truth capacity", "truth_capacity_rps"),
              ("CPU ms/request", "cpu_ms_per_request")],
}


def tables(results: dict[str, Any]) -> str:
    out: list[str] = []
    cases = results.get("cases") or {}
    by_case: dict[str, list[dict[str, Any]]] = {}
    for r in results["runs"]:
        by_case.setdefault(r["case"], []).append(r)
    for name, rs in by_case.items():
        mode = rs[0]["mode"]
        cols = COLUMNS.get(mode, COLUMNS["streams"])
        out.append(f"\n**{name}** ({(cases.get(name) or {}).get('doc', mode)})\n")
        out.append("| tool | runs ok | requests ok / truth | " + " | ".join(c for c, _ in cols) + " | others' cores |")
        out.append("| --- " * (len(cols) + 4) + "|")
        for tool in TOOLS:
            trs = [r for r in rs if r["tool"] == tool]
            if not trs:
                continue
            if all("not_run" in r for r in trs):
                out.append(f"| {tool} | – | – | " + " | ".join("–" for _ in cols) + f" | {trs[0]['not_run']} |")
                continue
            ok = [r for r in trs if "error" not in r and "not_run" not in r]
            cells = [" / ".join(_med(ok, k) for k in keys.split("|")) for _, keys in cols]
            out.append(f"| {tool} | {len(ok)}/{len(trs)} | {_med(ok, 'requests_ok', '{:.0f}')} / "
                       f"{_med(ok, 'requests_truth', '{:.0f}')} | " + " | ".join(cells)
                       + f" | {_med(ok, 'host.others_cores')} |")
        errs = [r for r in rs if "error" in r]
        for r in errs[:3]:
            out.append(f"\n{r['tool']} round {r.get('round')}: error: {r['error'][-300:]!r}")
        verdict = _cpu_verdict(rs)
        if verdict:
            out.append(f"\n{verdict}")
    return "\n".join(out)


def _cpu_verdict(rs: list[dict[str, Any]]) -> str:
    """rigbench's client CPU per request against the best peer's (medians over rounds); issue 32's target
    is at most a fifth of it."""
    def med(tool: str) -> float | None:
        xs = [r["cpu_ms_per_request"] for r in rs if r["tool"] == tool and isinstance(r.get("cpu_ms_per_request"), (int, float))]
        return statistics.median(xs) if xs else None

    ours = med("rigbench")
    peers_ = {t: m for t in TOOLS if t != "rigbench" and (m := med(t)) is not None}
    if not ours or not peers_:
        return ""
    best = min(peers_, key=lambda t: peers_[t])
    ratio = peers_[best] / ours
    return (f"client CPU per request: rigbench {ours:.3g} ms, best peer {best} {peers_[best]:.3g} ms: "
            f"{ratio:.1f}x below ({'met' if ratio >= 5 else 'NOT met'}: target >= 5x)")


if __name__ == "__main__":
    main()
