"""What users touch, on the real embedded llama-server + SmolLM2-135M (issue 33, item 5): a plan of
two rigs run end to end (`rigbench run PLAN.yaml`: the plan directory, its index, its comparison),
`rigbench compare` of those two rigs (they differ, and it says in what) and of one rig measured twice
(never "differs" by chance), the kernel's arrival stamps in a real run, and the HTML report of real
runs in Chromium. Until this file these paths ran against the emulator only.

Lean on purpose (the CI box has two cores): one scenario (chat_short, 128 -> 64 tokens), few
repetitions. The two rigs differ by one flag whose effect is structural, not a matter of load:
`--ubatch-size 1` makes llama-server prefill the prompt one token per pass, so its requests take
several times longer on any host. --allow-busy-host (`allow_busy_host: true` in the plan): these
tests are about the paths, not the host (the busy-host check has its own adversaries and controls in
test_host_live.py).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import pytest

from rigbench.analysis import analyze_run
from rigbench.plan import read_plan_index
from rigbench.store import RunReader
from tests.needs import requires

from .test_html_live import CHROMIUM, load_in_browser

pytestmark = [pytest.mark.live, pytest.mark.proof, pytest.mark.timeout(1800)]

ENV = {**os.environ, "COLUMNS": "200"}
BUSY_OK = ["--allow-busy-host"]
PLAN = textwrap.dedent("""\
    name: live-two-rigs
    suites: [speed]
    allow_busy_host: true
    speed: {profile: quick, scenarios: [chat_short], repetitions: 3, warmup: 1}
    rigs:
      - name: base
        embedded: {}
      - name: ub1
        embedded: {extra_args: ["--ubatch-size", "1"]}
    """)


def rigbench(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True,
                          timeout=timeout, env=ENV)


class PlanRun(NamedTuple):
    res: subprocess.CompletedProcess[str]
    plan_dir: Path
    runs: dict[str, Path]  # rig name -> its run directory
    html: Path
    markdown: Path


@pytest.fixture(scope="module")
def plan_run(tmp_path_factory: pytest.TempPathFactory) -> PlanRun:
    base = tmp_path_factory.mktemp("plan_live")
    plan = base / "two-rigs.yaml"
    plan.write_text(PLAN)
    html, md = base / "report.html", base / "post.md"
    res = rigbench("run", str(plan), "--out", str(base / "runs"), "--html", str(html), "--markdown", str(md))
    dirs = [d for d in (base / "runs").iterdir() if d.is_dir()] if (base / "runs").exists() else []
    assert len(dirs) == 1, (dirs, res.stdout[-3000:], res.stderr[-3000:])
    index = read_plan_index(dirs[0])
    runs = {r.name: dirs[0] / r.run_dir for r in index.rigs if r.run_dir}
    return PlanRun(res, dirs[0], runs, html, md)


def test_a_plan_of_two_rigs_runs_end_to_end(plan_run: PlanRun) -> None:
    res, plan_dir = plan_run.res, plan_run.plan_dir
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    index = read_plan_index(plan_dir)
    assert [(r.name, r.kind, r.status, r.trusted) for r in index.rigs] == [
        ("base", "embedded", "complete", True), ("ub1", "embedded", "complete", True)], index
    assert (plan_dir / "plan.yaml").read_text() == PLAN and index.finished_at is not None
    for name, run_dir in plan_run.runs.items():
        reader = RunReader(run_dir)
        assert reader.header.status == "complete" and reader.source_data_id == index.entry(name).source_data_id
        reqs = [r for r in reader.raw_records("speed_request") if not r["warmup"]]
        assert len(reqs) == 3 and all(r["result"]["usage"]["completion_tokens"] == 64 for r in reqs)
    argv = {n: RunReader(d).header.fingerprint.argv for n, d in plan_run.runs.items()}  # type: ignore[union-attr]
    assert argv["ub1"] is not None and "--ubatch-size" in argv["ub1"] and "--ubatch-size" not in (argv["base"] or [])
    # the plan ends on each rig's summary and the comparison with the first rig; the Markdown post
    # says what differs between the rigs
    assert "base" in res.stdout and "ub1" in res.stdout and "chat_short" in res.stdout
    post = plan_run.markdown.read_text()
    assert "What differs between the rigs" in post and "--ubatch-size 1" in post, post[:3000]
    # and the plan directory re-renders as it was written
    again = rigbench("report", str(plan_dir))
    assert again.returncode == 0 and "ub1" in again.stdout, again.stderr


def test_compare_of_two_rigs_says_what_differs(plan_run: PlanRun) -> None:
    res = rigbench("compare", str(plan_run.runs["base"]), str(plan_run.runs["ub1"]))
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    row = next(line for line in out.splitlines() if line.strip().startswith("chat_short"))
    # prefilling 128 tokens one pass at a time: e2e tok/s several times lower, far outside any noise
    assert row.rstrip().endswith("differs"), out
    m = re.search(r"(\d+\.\d+)×±", row)
    assert m and float(m.group(1)) < 0.8, row
    assert "fingerprint differences:" in out and "--ubatch-size 1" in out, out


def test_one_rig_measured_twice_is_never_called_different(tmp_path: Path) -> None:
    """Two runs of the same rig, side by side (each launches its own llama-server; measured at the same
    time, so that neither sees a host the other did not): compare says "same" or "inconclusive".

    By construction the two runs are exchangeable, so a Welch test calls them different with
    probability alpha: the test uses alpha 0.01, which keeps that at 1 in 100 for a test that must
    not flake. What it catches is a bias between two runs of one rig (warm-up leaking into the
    figures, a cache one run leaves to the other, a drift within a run) that would make "differs" far
    more likely than alpha."""
    args = ["run", "--scenarios", "chat_short", "--repetitions", "5", "--warmup", "1", "--no-sanity",
            "--allow-untrusted", *BUSY_OK]
    procs = [subprocess.Popen([sys.executable, "-m", "rigbench", *args, "--out", str(tmp_path / side)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV) for side in "ab"]
    outs = [p.communicate(timeout=900) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    a, b = (next(d for d in (tmp_path / side).iterdir() if d.is_dir()) for side in "ab")
    res = rigbench("compare", str(a), str(b), "--alpha", "0.01")
    assert res.returncode == 0, res.stdout + res.stderr
    row = next(line for line in res.stdout.splitlines() if line.strip().startswith("chat_short"))
    assert re.search(r"(same ±5%|inconclusive)", row) and "differs" not in row, res.stdout
    # the same rig: no difference that changes what is measured (ports and paths aside)
    assert "fingerprint differences:" not in res.stdout or "argv" not in res.stdout, res.stdout


def test_a_real_run_times_its_reads_by_the_kernels_arrival_stamps(plan_run: PlanRun) -> None:
    reader = RunReader(plan_run.runs["base"])
    reqs = [r for r in reader.raw_records("speed_request")]
    assert reqs
    for r in reqs:
        res = r["result"]
        assert res["arrival"]["source"] == "kernel", res["arrival"]
        kernel, own = res["chunk_kernel_ns"], res["chunk_ns"]
        assert len(kernel) == len(own) > 0
        # the kernel received each read before rigbench's own stamp of it, and not long before
        assert all(0 <= o - k < 1_000_000_000 for k, o in zip(kernel, own, strict=True)), (kernel[:5], own[:5])
    measured = [r for r in reqs if not r["warmup"]]  # the stamping error, like every figure, leaves warm-up out
    assert 0 < len(measured) < len(reqs)
    stamping = analyze_run(reader).sections["stamping"]
    assert stamping.source == "kernel" and stamping.requests_kernel == len(measured) and stamping.requests_user == 0
    assert stamping.reads >= len(measured) * 32 and stamping.late_p50_s is not None and stamping.late_p50_s >= 0
    shown = rigbench("report", str(plan_run.runs["base"]))
    assert "kernel arrivals (SO_TIMESTAMPNS); rigbench's own stamping error" in shown.stdout, shown.stdout[-3000:]


@requires(CHROMIUM is not None, "chromium is not installed (.ci/run installs it)")
def test_the_html_report_of_real_runs_loads_in_chromium(plan_run: PlanRun, tmp_path: Path) -> None:
    page = plan_run.html.read_text()
    assert "SmolLM2" in page and "llama" in page.lower() and "base" in page and "ub1" in page
    assert "<script" not in page and page.count("<svg") >= 3
    got = asyncio.run(load_in_browser(plan_run.html, tmp_path / "chromium-profile"))
    assert [u for u in got["requests"] if not u.startswith(("file:", "data:"))] == []
    assert got["exceptions"] == []
    assert [c for c in got["console"] if (c.get("entry") or c).get("level") in ("error", "warning")] == []
    assert got["runs_table_y"] is not None and got["runs_table_y"] < 800, got["runs_table_y"]
    assert got["png"][:8] == b"\x89PNG\r\n\x1a\n" and len(got["png"]) > 20_000
    keep = os.environ.get("RIGBENCH_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "html-report-live.png").write_bytes(got["png"])
