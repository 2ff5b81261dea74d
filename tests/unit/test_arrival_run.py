"""`rigbench run --endpoint` through a buffering proxy (`rigbench proxy`) in front of the emulator ends
UNTRUSTED for latency, exit 1, with the buffering named and TTFT/ITL shown as not measurable in the
terminal, Markdown and HTML reports. The same emulator direct, and one streaming multi-token chunks
like speculative decoding, stay trusted with their latency printed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from rigbench.analysis import analyze_run
from rigbench.report import render_html
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

from .cli_inproc import invoke

# PYTHONPATH passes on: a worktree's source runs first in the subprocesses too
ENV = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
       **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}}


@contextmanager
def proxy_process(upstream: str, mode: str, period_ms: float = 100.0, *extra: str) -> Iterator[str]:
    """`rigbench proxy` in a process of its own; yields its OpenAI base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "rigbench", "proxy", "--upstream", upstream, "--mode", mode,
                             "--period-ms", str(period_ms), "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening "), (line, proc.stderr.read() if proc.stderr else "")
        yield line.removeprefix("listening ")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class Outcome(NamedTuple):
    res: subprocess.CompletedProcess[str]
    header: dict[str, Any]
    run_dir: Path
    markdown: str
    html: str


def _run(script: EmulatorScript, mode: str | None, out: Path) -> Outcome:
    out.mkdir()
    with EmulatorProcess(script) as emu, proxy_process(emu.url, mode, 100.0, *PROXY_ARGS.get(mode or "", ())) \
            if mode else _direct(emu.url) as url:
        res = subprocess.run(
            [sys.executable, "-m", "rigbench", "run", "--endpoint", url, "--scenarios", "chat_short",
             "--repetitions", "3", "--warmup", "0", "--out", str(out / "runs"), "--markdown", str(out / "r.md"),
             # two runs at a time (and a proxy in front of the emulator) make each other's host busy by
             # construction; the busy-host check has its own adversary and control (test_host_conditions.py)
             "--allow-busy-host"],
            capture_output=True, text=True, timeout=300, env=ENV)
    assert (out / "runs").is_dir(), res.stdout[-3000:] + res.stderr[-3000:]
    [run_dir] = list((out / "runs").iterdir())
    html = render_html(["rig"], [analyze_run(RunReader(run_dir))])
    return Outcome(res, json.loads((run_dir / "run.json").read_text()), run_dir,
                   (out / "r.md").read_text() if (out / "r.md").exists() else "", html)


@contextmanager
def _direct(url: str) -> Iterator[str]:
    yield url


HEALTHY = EmulatorScript(persona="healthy", ttft=Delay(mean_ms=20.0), itl=Delay(mean_ms=5.0))
SPEC = HEALTHY.model_copy(update={"spec_depth": 4, "spec_accept": 0.7})
CASES = {"direct": (HEALTHY, None), "spec": (SPEC, None), "whole": (HEALTHY, "whole"), "flush": (HEALTHY, "flush"),
         "coalesce": (HEALTHY, "coalesce")}
# 5 ms a token, 64 tokens: writes at random gaps of 20-120 ms (the event cap out of reach), 4 to 24
# steps each. With so few gaps a request's may cluster into a period by chance: named a flush then.
PROXY_ARGS = {"coalesce": ("--gap-ms", "20-120", "--events", "64-64", "--seed", "1")}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    base = tmp_path_factory.mktemp("arrival")
    with ThreadPoolExecutor(2) as pool:
        futures = {k: pool.submit(_run, s, m, base / k) for k, (s, m) in CASES.items()}
        return {k: f.result() for k, f in futures.items()}


@pytest.mark.parametrize(("case", "words"), [
    ("whole", r"arrived in one read after \d\.\d s"),
    ("flush", r"arrived \d+\.\d engine steps per read at a near-fixed (?P<period>\d+) ms period"),
    ("coalesce", r"arrived \d+ engine steps per read at irregular gaps \(\d+ ms, median\), read at once by the "
                 r"client \(kernel stamps\)|arrived \d+\.\d engine steps per read at a near-fixed \d+ ms period"),
])
def test_a_buffering_proxy_untrusts_latency_and_names_it(case: str, words: str, outcomes: dict[str, Outcome]) -> None:
    o = outcomes[case]
    assert o.res.returncode == 1, o.res.stdout[-3000:] + o.res.stderr[-3000:]
    trust = o.header["trust"]
    assert not trust["trusted"]
    [reason] = trust["reasons"]
    assert reason.startswith("latency figures: chat_short (c=1) buffered by the server or a proxy: ")
    assert re.match(r"[^:]+: [^:]+: 3 of 3 requests", reason) or case == "coalesce", reason  # it may name two kinds
    m = re.search(words, reason)
    assert m and reason.endswith("TTFT and ITL not measurable"), reason
    if "period" in m.groupdict():  # the proxy's 100 ms, within the tolerance the period is clustered with
        assert 75 <= int(m.group("period")) <= 125, reason
    # every report format: the finding, and TTFT/ITL as not measurable, never as a figure
    a = analyze_run(RunReader(o.run_dir))
    assert a.speed is not None
    [row] = a.speed.rows
    assert row.arrival is not None and row.arrival.held == 3, row.arrival
    assert row.ttft_s is None and row.itl_mean_s is None and row.itl_gaps_s is None and row.decode_tok_s is None
    assert row.e2e_tok_s is not None  # throughput still holds
    for text in (o.res.stdout, o.markdown, o.html):
        assert "buffered by the server or a proxy" in text
        assert "n/m†" in text and "not measurable" in text
    assert "UNTRUSTED" in o.res.stdout and "| chat_short | 128→64 | 3 |" in o.markdown
    md_row = next(line for line in o.markdown.splitlines() if line.startswith("| chat_short | 128→64 | 3 |"))  # the speed table
    assert md_row.count("n/m†") == 3  # decode tok/s, TTFT, ITL
    assert "n/m†" in next(line for line in o.markdown.splitlines() if "| TTFT |" in line)
    # nor drawn: no TTFT/ITL plot of the buffer's timing (the plot would say "measured")
    assert "TTFT and ITL over requests (CDF)" not in o.html


@pytest.mark.parametrize("case", ["direct", "spec"])
def test_a_healthy_stream_keeps_its_latency(case: str, outcomes: dict[str, Outcome]) -> None:
    o = outcomes[case]
    assert o.res.returncode == 0, o.res.stdout[-3000:] + o.res.stderr[-3000:]
    assert o.header["trust"]["trusted"], o.header["trust"]
    a = analyze_run(RunReader(o.run_dir))
    assert a.speed is not None
    [row] = a.speed.rows
    assert row.arrival is not None and row.arrival.judged == 3 and not row.arrival.buffered
    assert "TTFT and ITL over requests (CDF)" in o.html
    assert row.latency_not_measurable is None and row.itl_mean_s is not None
    assert (row.ttft_s is not None) == (case == "direct")  # multi-token chunks withhold TTFT, as before
    for text in (o.res.stdout, o.markdown, o.html):
        assert "buffered" not in text and "n/m†" not in text


@pytest.mark.parametrize(("args", "words"), [
    (["--upstream", "localhost:8080"], "--upstream must be an http:// or https:// URL, not 'localhost:8080'"),
    (["--upstream", "http://127.0.0.1:8080", "--mode", "half"], "proxy mode must be whole, flush or coalesce, not 'half'"),
    (["--upstream", "http://127.0.0.1:8080", "--mode", "coalesce", "--gap-ms", "30-x"],
     "--gap-ms takes LOW-HIGH, e.g. 20-250, not '30-x'"),
    (["--upstream", "http://127.0.0.1:8080", "--mode", "coalesce", "--gap-ms", "250-30"],
     "a range above 0 ms, low to high, not 250-30"),
    (["--upstream", "http://127.0.0.1:8080", "--mode", "coalesce", "--events", "0-4"],
     "a range of at least 1, low to high, not 0-4"),
    (["--upstream", "http://127.0.0.1:8080", "--mode", "flush", "--period-ms", "0"], "above 0 ms, not 0.0"),
])
def test_proxy_bad_input_exits_2_with_the_value_seen(args: list[str], words: str) -> None:
    r = invoke("proxy", *args)
    assert r.code == 2 and r.traceback is None, r
    assert words in r.stderr, r.stderr
