"""What a peer user expects to read in a load report (issue 30 item 8): sessions reported as sessions per
second with each turn's figures; every latency as GuideLLM, AIPerf and `vllm bench serve` print it (mean,
median, std, p90, p95, p99) in the Markdown, HTML and JSON while the terminal stays compact; the per-request
mean ITL named TPOT where those tools use that name."""

from __future__ import annotations

import html
import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from rigbench.analysis import analyze_run, load_timing, summarize_load
from rigbench.analysis._stats import describe
from rigbench.records import LoadRequest
from rigbench.report import render_html, render_json, render_markdown, render_terminal
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault
from tests.unit.cli_inproc import Result, invoke

TOKENIZING = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=1), output_tokens=16, version="0.32.0")
ARGS = ["--no-sanity", "--allow-untrusted", "--allow-busy-host"]


def rigbench(*args: str) -> Result:
    res = invoke(*args)
    assert res.traceback is None, res.traceback
    assert res.code == 0, res.stdout[-2000:] + res.stderr
    return res


def _run(out: Path) -> RunReader:
    (d,) = [p for p in out.iterdir() if p.is_dir()]
    return RunReader(d)


def test_sessions_are_reported_per_second_of_sessions_with_each_turns_figures(tmp_path: Path) -> None:
    with EmulatorProcess(TOKENIZING) as emu:
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--rate", "4", "--sessions", "3", "--turns", "3",
                       "--input-tokens", "32", "--output-tokens", "16", "--out", str(tmp_path))
    reader = _run(tmp_path)
    s = summarize_load(reader)
    assert s is not None
    [w] = s.windows
    assert (w.sessions, w.turns, w.sessions_completed) == (3, 3, 3)
    assert w.sessions_per_s == pytest.approx(3 / w.window_s)
    assert [t.turn for t in w.per_turn] == [0, 1, 2] and all(t.requests == 3 and t.failed == 0 for t in w.per_turn)
    prompts = [t.prompt_tokens.median for t in w.per_turn if t.prompt_tokens is not None]
    # each turn resends the history: the first prompt, its 16-token reply and a new 32-token message
    assert len(prompts) == 3 and prompts[0] == 32 and prompts[1] >= prompts[0] + 16 + 32 and prompts[2] > prompts[1]
    assert all(t.ttft_response_s is not None and t.e2e_response_s is not None for t in w.per_turn)
    # the first turns went out at their length; later turns' targets are their new message only: no finding
    assert not [x for x in analyze_run(reader).warnings if "input lengths" in x]
    flat = " ".join(res.stdout.split())
    assert "Load: sessions, per turn" in flat and "4 sessions/s" in flat
    assert "3 sessions of 3 turns started at 4 sessions/s; 3 completed every turn" in flat
    md = render_markdown(analyze_run(reader))
    assert "| r0 | 3 | 3 | 0 |" in md  # the third turn's row: 3 requests, none failed
    # a session whose turn fails stops there: it is not completed, and its later turns were never sent
    failing = TOKENIZING.model_copy(update={"faults": [Fault(kind="http_status", status=500, every=1000, offset=4)]})
    with EmulatorProcess(failing) as emu:
        rigbench("run", "--endpoint", emu.url, *ARGS, "--rate", "4", "--sessions", "3", "--turns", "3",
                 "--input-tokens", "32", "--output-tokens", "16", "--out", str(tmp_path / "failing"))
    s = summarize_load(_run(tmp_path / "failing"))
    assert s is not None
    [w] = s.windows
    assert w.sessions_completed == 2 and sum(t.failed for t in w.per_turn) == 1
    # the failed turn's session sent no more turns after it
    assert sum(t.requests for t in w.per_turn) == 9 - (2 - next(t.turn for t in w.per_turn if t.failed))


def test_every_latency_carries_mean_median_std_and_three_percentiles_in_the_files(tmp_path: Path) -> None:
    with EmulatorProcess(TOKENIZING.model_copy(update={"ttft": Delay(dist="uniform", mean_ms=20, jitter_ms=15)})) \
            as emu:
        rigbench("run", "--endpoint", emu.url, *ARGS, "--rate", "40", "--requests", "30", "--input-tokens", "32",
                 "--output-tokens", "16", "--out", str(tmp_path))
    reader = _run(tmp_path)
    a = analyze_run(reader)
    w = a.sections["load"].windows[0]
    # the figures are the per-request values' own statistics (numpy's, sample std), over the steady interval
    ttft = w.ttft_response_s
    assert ttft is not None and ttft.p95 is not None and ttft.p90 is not None and ttft.p99 is not None
    reqs = reader.records("load_request", LoadRequest)
    zero = min(q.result.scheduled_ns or 0 for q in reqs)
    assert w.steady is not None
    picked = [load_timing(q).ttft_response_s for q in reqs
              if (q.result.scheduled_ns or 0) - zero > w.steady.warmup_s * 1e9]  # the steady interval's arrivals
    ref = describe([x for x in picked if x is not None])
    assert ref is not None and ttft.n == ref.n and ttft.p95 == pytest.approx(ref.p95)
    assert ttft.p95 == pytest.approx(float(np.percentile([x for x in picked if x is not None], 95)))
    row = (f"| r0 | 40 | TTFT (response) | {ttft.n} | {ttft.mean * 1e3:.1f} | {ttft.median * 1e3:.1f} | "
           f"{ttft.std * 1e3:.1f} | {ttft.p90 * 1e3:.1f} | {ttft.p95 * 1e3:.1f} | {ttft.p99 * 1e3:.1f} |")
    md = render_markdown(a)
    assert "Load: latency distribution (ms)" in md and row in md
    assert "| window | offered req/s | figure | n | mean | median | std | p90 | p95 | p99 |" in md
    page = html.unescape(render_html(["run"], [a]))
    assert "Load: latency distribution (ms)" in page and f"<td class=\"num\">{ttft.p95 * 1e3:.1f}</td>" in page
    data = json.loads(render_json(a))["sections"]["load"]["windows"][0]
    assert data["ttft_response_s"]["p95"] == pytest.approx(ttft.p95) and data["itl_s"]["std"] >= 0
    # the terminal stays compact: p50 / p99, and where the rest is
    console = Console(file=io.StringIO(), width=120, color_system=None)
    render_terminal(a, console)
    term = " ".join(console.file.getvalue().split())  # type: ignore[attr-defined]
    assert "ITL (TPOT)" in term and "in the Markdown (--markdown), HTML (--html) and JSON (--json) reports" in term
