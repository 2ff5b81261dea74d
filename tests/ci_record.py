"""A kept record of one test session: what ran, how long each test took, what failed, and what the
host was doing meanwhile (issue 33, item 8: CI logs are not kept, and the suite's flake rate was
unknown).

Active only when RIGBENCH_CI_RECORD_DIR names a directory (`.ci/run` sets one per run under the user
cache dir; `benchmarks/suite_rounds.py` one per round). At the end of the session it writes there:

- `summary.json`: the session (start, end, duration, exit status, git commit, command), counts by
  outcome, every test's outcome and durations (setup + call + teardown), the failures with their
  first message line, the slowest tests, the host (CPU model and count, memory, and sampled every
  5 s by a process of its own: 1-minute load, run queue, and the cores busy and stolen by the
  hypervisor), and the time .ci/run spent before pytest (RIGBENCH_CI_T0, RIGBENCH_CI_T_README);
- `summary.txt`: the same in a few lines, which is also printed before pytest's closing line;
- one line appended to `index.tsv` in the parent directory: the runs one after another.

Nothing here touches a test's outcome; the sampler is a separate process so that no thread of it runs
in the process whose timing tests it records.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests.ci_index import append_row

__all__ = ["RECORD_ENV", "CiRecord", "host_summary", "plugin_from_env", "read_samples"]

RECORD_ENV = "RIGBENCH_CI_RECORD_DIR"
SAMPLE_EVERY_S = 5.0

# The sampler: one line of JSON per sample, until its stdin closes.
_SAMPLER = """
import json, select, sys, time
def stat():
    with open("/proc/stat") as f:
        lines = f.read().splitlines()
    cpu = [int(x) for x in lines[0].split()[1:]]
    running = next((int(l.split()[1]) for l in lines if l.startswith("procs_running ")), None)
    return cpu, running
every = float(sys.argv[1])
while True:
    try:
        with open("/proc/loadavg") as f:
            load1 = float(f.read().split()[0])
        cpu, running = stat()
        print(json.dumps({"t": time.time(), "load1": load1, "cpu": cpu, "running": running}), flush=True)
    except (OSError, ValueError, IndexError):
        print(json.dumps({"t": time.time()}), flush=True)
    if select.select([sys.stdin], [], [], every)[0]:
        break
"""


def read_samples(lines: list[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def host_summary(samples: list[dict[str, Any]], cpus: int) -> dict[str, Any]:
    """Load and CPU figures over the samples. /proc/stat's cpu line: user nice system idle iowait irq
    softirq steal ...; busy = all but idle and iowait; per interval, in cores (share x CPUs)."""
    loads = [s["load1"] for s in samples if "load1" in s]
    running = [s["running"] for s in samples if s.get("running") is not None]
    steal, busy = [], []
    with_cpu = [s for s in samples if "cpu" in s]
    for a, b in pairwise(with_cpu):
        d = [y - x for x, y in zip(a["cpu"], b["cpu"], strict=False)]
        total = sum(d[:8])
        if total <= 0:
            continue
        steal.append(d[7] / total * cpus if len(d) > 7 else 0.0)
        busy.append((total - d[3] - d[4]) / total * cpus)

    def mean(xs: list[float]) -> float | None:
        return round(sum(xs) / len(xs), 3) if xs else None

    return {"samples": len(samples), "every_s": SAMPLE_EVERY_S,
            "load1_mean": mean(loads), "load1_max": max(loads) if loads else None,
            "run_queue_mean": mean([float(r) for r in running]), "run_queue_max": max(running) if running else None,
            "busy_cores_mean": mean(busy), "busy_cores_max": round(max(busy), 3) if busy else None,
            "steal_cores_mean": mean(steal), "steal_cores_max": round(max(steal), 3) if steal else None}


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _mem_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError):
        pass
    return None


def _commit(root: Path) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None


def _env_time(name: str) -> float | None:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return None


class CiRecord:
    """The plugin (registered by tests/conftest.py when RECORD_ENV is set)."""

    def __init__(self, out: Path, root: Path) -> None:
        self.out, self.root = out, root
        self.started = time.time()
        self.tests: dict[str, dict[str, Any]] = {}
        self.failures: dict[str, str] = {}
        self.summary_text = ""
        self.sampler: subprocess.Popen[str] | None = None

    # -- hooks ------------------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self.sampler = subprocess.Popen([sys.executable, "-c", _SAMPLER, str(SAMPLE_EVERY_S)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        t = self.tests.setdefault(report.nodeid, {"outcome": "passed", "duration_s": 0.0})
        t["duration_s"] = round(t["duration_s"] + report.duration, 3)
        if report.when == "call":
            t["call_s"] = round(report.duration, 3)
        xfail = hasattr(report, "wasxfail")
        if report.failed:
            t["outcome"] = "failed" if report.when == "call" else "error"
            self.failures[report.nodeid] = self._message(report)
        elif report.skipped and t["outcome"] == "passed":
            t["outcome"] = "xfailed" if xfail else "skipped"
        elif report.passed and report.when == "call" and xfail:
            t["outcome"] = "xpassed"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.tests[report.nodeid] = {"outcome": "error", "duration_s": 0.0}
            self.failures[report.nodeid] = self._message(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        finished = time.time()
        samples: list[dict[str, Any]] = []
        if self.sampler is not None:
            try:
                out, _ = self.sampler.communicate("stop\n", timeout=30)
                samples = read_samples(out.splitlines())
            except (OSError, subprocess.SubprocessError, ValueError):
                self.sampler.kill()
        cpus = os.cpu_count() or 1
        counts: dict[str, int] = {}
        for t in self.tests.values():
            counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
        t0, t_readme = _env_time("RIGBENCH_CI_T0"), _env_time("RIGBENCH_CI_T_README")
        slowest = sorted(self.tests.items(), key=lambda kv: -kv[1]["duration_s"])[:30]
        record = {
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
            "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(finished)),
            "pytest_s": round(finished - self.started, 1),
            # .ci/run: from its start (venv, apt) and from the README command's start (install, setup) to pytest's
            "before_readme_command_s": round(t_readme - t0, 1) if t0 and t_readme else None,
            "readme_command_to_pytest_s": round(self.started - t_readme, 1) if t_readme else None,
            "total_s": round(finished - t0, 1) if t0 else None,
            "exit_status": int(session.exitstatus),
            "commit": _commit(self.root),
            "command": sys.argv,
            "ci": os.environ.get("CI"),
            "counts": counts,
            "host": {"cpus": cpus, "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                     "cpu_model": _cpu_model(), "mem_gib": _mem_gib(), **host_summary(samples, cpus)},
            "failures": self.failures,
            "slowest": [{"test": k, "duration_s": v["duration_s"], "outcome": v["outcome"]} for k, v in slowest],
            "tests": self.tests,
        }
        self.summary_text = self._text(record)
        (self.out / "summary.json").write_text(json.dumps(record, indent=1))
        (self.out / "summary.txt").write_text(self.summary_text + "\n")
        self._index(record)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.summary_text:
            terminalreporter.section("kept record of this session (tests/ci_record.py)", sep="=")
            for line in self.summary_text.splitlines():
                terminalreporter.line(line)

    # -- helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _message(report: pytest.TestReport | pytest.CollectReport) -> str:
        crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
        text = getattr(crash, "message", None) or str(getattr(report, "longreprtext", "") or report.longrepr)
        return text.strip().splitlines()[0][:300] if text.strip() else "(no message)"

    def _text(self, r: dict[str, Any]) -> str:
        h = r["host"]
        c = r["counts"]
        order = ["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
        lines = [
            f"record: {self.out} (summary.json: every test's outcome and durations; index: {self.out.parent / 'index.tsv'})",
            f"session: {r['started_utc']} to {r['finished_utc']}, pytest {r['pytest_s']:.0f} s"
            + (f", .ci/run {r['total_s']:.0f} s in all ({r['before_readme_command_s']:.0f} s before the README command, "
               f"{r['readme_command_to_pytest_s']:.0f} s of install and setup)" if r["total_s"] else "")
            + f"; exit {r['exit_status']}; commit {(r['commit'] or '?')[:12]}",
            "outcomes: " + ", ".join(f"{c[k]} {k}" for k in order if c.get(k)),
            f"host: {h['cpus']} CPUs ({h['cpu_model'] or 'model unknown'}), {h['mem_gib']} GiB; 1-min load mean "
            f"{h['load1_mean']} max {h['load1_max']}; busy cores mean {h['busy_cores_mean']}; steal cores mean "
            f"{h['steal_cores_mean']} max {h['steal_cores_max']} ({h['samples']} samples, every {SAMPLE_EVERY_S:g} s)",
            "slowest:",
            *(f"  {s['duration_s']:7.1f} s  {s['test']}" for s in r["slowest"][:8]),
        ]
        lines += [f"failed: {k}: {v}" for k, v in list(r["failures"].items())[:20]]
        if len(r["failures"]) > 20:
            lines.append(f"... and {len(r['failures']) - 20} more failures (summary.json)")
        return "\n".join(lines)

    def _index(self, r: dict[str, Any]) -> None:
        c, h = r["counts"], r["host"]
        append_row(self.out, {
            "started_utc": r["started_utc"], "commit": (r["commit"] or "")[:12], "exit": r["exit_status"],
            "passed": c.get("passed", 0), "failed": c.get("failed", 0), "errors": c.get("error", 0),
            "skipped": c.get("skipped", 0), "xfailed": c.get("xfailed", 0), "pytest_s": r["pytest_s"],
            "total_s": r["total_s"], "load1_mean": h["load1_mean"], "load1_max": h["load1_max"],
            "steal_cores_mean": h["steal_cores_mean"], "steal_cores_max": h["steal_cores_max"],
            "cpus": h["cpus"], "cpu_model": h["cpu_model"], "record_dir": str(self.out)})


def plugin_from_env(root: Path) -> CiRecord | None:
    where = os.environ.get(RECORD_ENV)
    return CiRecord(Path(where), root) if where else None
