"""The progress lines a user watches during `rigbench run`, read at 80 columns while the real speed and
load suites run against the emulator: the count is of measured requests only (warm-up shown apart, never
"0/3" for --repetitions 2), the last request's decode tok/s and TTFT appear, an ETA (or elapsed/duration
in rate mode), and no line is cut where it matters. A pipe gets the final state once, not every frame."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

from rich.console import Console

from rigbench.cli._progress import RichProgress, live_figures
from rigbench.records import StreamResult
from rigbench.rig import EndpointSpec
from rigbench.runner import RunConfig, execute_run
from rigbench.suites import SuiteSettings
from rigbench.suites.load import LoadSettings
from rigbench.suites.speed import SpeedSettings
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault

FAST = {"ttft": Delay(mean_ms=20), "itl": Delay(mean_ms=4), "output_tokens": 16}


class _Watched(RichProgress):
    """RichProgress that keeps what an 80-column terminal showed after every advance."""

    def __init__(self) -> None:
        super().__init__(Console(file=io.StringIO(), width=80, emoji=False))
        self.frames: list[list[str]] = []

    def advance(self, task_id: int, n: int = 1, **kw: object) -> None:
        super().advance(task_id, n, **kw)  # type: ignore[arg-type]
        self.frames.append(self.lines(80))


def _run(tmp_path: Path, settings: SuiteSettings, suite: str, script: EmulatorScript) -> _Watched:
    prog = _Watched()
    with EmulatorProcess(script) as emu, prog:
        cfg = RunConfig(suite_names=[suite], settings=settings, out_dir=tmp_path, rig=EndpointSpec(base_url=emu.url),
                        sanity=False, allow_untrusted=True)
        asyncio.run(execute_run(cfg, prog))
    return prog


def _speed_lines(prog: _Watched) -> list[str]:
    return [line for frame in prog.frames for line in frame if "chat_short" in line]


def test_speed_progress_counts_measured_requests_and_shows_live_figures(tmp_path: Path) -> None:
    speed = SpeedSettings(scenarios=["chat_short"], repetitions=2, warmup=1, concurrency=[1])
    prog = _run(tmp_path, SuiteSettings(speed=speed), "speed", EmulatorScript(**FAST))
    lines = _speed_lines(prog)
    assert len(lines) == 3  # one warm-up request, two measured
    assert all(len(line) <= 80 for frame in prog.frames for line in frame)
    # the warm-up request is shown as such, not counted: the count is of the 2 measured ones, never out of 3
    assert "warm-up 1/1" in lines[0] and re.search(r"\b0/2\b", lines[0]) and "tok/s" not in lines[0]
    assert re.search(r"\b1/2\b", lines[1]) and re.search(r"\b2/2\b", lines[2])
    assert not any("/3" in line for line in lines)
    # the last measured request's figures, as the report defines them, and a time (ETA mid-run)
    for line in lines[1:]:
        assert re.search(r"\d+(\.\d)? tok/s, TTFT \d+ ms", line), line
    assert re.search(r"ETA \d+:\d\d", lines[1]), lines[1]
    assert "speed chat_short 128→64" in lines[2]  # the description is whole at 80 columns


def test_a_failed_request_says_failed_instead_of_figures(tmp_path: Path) -> None:
    script = EmulatorScript(**FAST, faults=[Fault(kind="http_status", status=503, message="busy", every=1)])
    speed = SpeedSettings(scenarios=["chat_short"], repetitions=1, warmup=0, concurrency=[1])
    lines = _speed_lines(_run(tmp_path, SuiteSettings(speed=speed), "speed", script))
    assert "failed (http_status)" in lines[-1] and "tok/s" not in lines[-1]


def test_rate_mode_shows_elapsed_against_the_window_duration(tmp_path: Path) -> None:
    load = LoadSettings(rate_rps=8.0, arrival="constant", duration_s=1.0)
    prog = _run(tmp_path, SuiteSettings(load=load), "load", EmulatorScript(**FAST))
    lines = [line for frame in prog.frames for line in frame if "req/s" in line]
    assert lines, prog.frames[-1]
    assert all(re.search(r"\d:\d\d/0:01\b", line) for line in lines), lines[-1]
    assert re.search(r"\d+(\.\d)? tok/s, TTFT \d+ ms", lines[-1]), lines[-1]
    assert all(len(line) <= 80 for line in lines)


def test_the_build_line_keeps_its_count_at_80_columns() -> None:
    prog = RichProgress(Console(file=io.StringIO(), width=80, emoji=False))
    with prog:
        prog.build(208, 215, "compiling llama-server (cmake, Ninja, x86-64-v3 CPU build, 2 jobs, cached after)")
        lines = prog.lines(80)
    assert any("208/215" in line for line in lines), lines
    assert all(len(line) <= 80 for line in lines)


def test_a_pipe_gets_the_final_state_once() -> None:
    out = io.StringIO()  # not a terminal: a CI log, `| tee`
    prog = RichProgress(Console(file=out, width=80, emoji=False))
    with prog:
        t = prog.task("speed chat_short 128→64", 3, warmup=1)
        assert "warm-up 0/1" in prog.lines()[0]  # warm-up runs first: said before its first request ends
        prog.advance(t, warmup=True)
        for _ in range(3):
            prog.advance(t)
        prog.done(t)
    text = out.getvalue()
    assert text.count("speed chat_short") == 1, text
    assert "3/3" in text and "warm-up" not in text


def test_live_figures_come_from_the_request_as_the_report_defines_them() -> None:
    ms = 1_000_000
    res = StreamResult(sent_ns=0, first_event_ns=100 * ms, done_ns=1_100 * ms,
                       chunk_ns=[100 * ms + i * 10 * ms for i in range(101)], chunk_chars=[4] * 101,
                       chunk_kind="c" * 101, usage={"completion_tokens": 101}, http_status=200)
    # 100 tokens after the first in 1.0 s: 100 tok/s; the first token at 100 ms
    assert live_figures(res) == "100 tok/s, TTFT 100 ms"


def test_the_eta_counts_down_between_units_instead_of_growing_while_one_runs() -> None:
    now = [0.0]
    prog = RichProgress(Console(file=io.StringIO(), width=80, emoji=False), get_time=lambda: now[0])
    with prog:
        t = prog.task("sanity gate: 4 known-answer questions", 4)
        now[0] = 10.0
        prog.advance(t)  # one in 10 s: three more take about 30 s
        assert "ETA 0:30" in prog.lines()[0]
        now[0] = 20.0  # a slow second question: the estimate counts down, it does not grow
        assert "ETA 0:20" in prog.lines()[0]
        now[0] = 60.0
        assert "ETA 0:00" in prog.lines()[0]
        prog.advance(t)  # two in 60 s: two more take about 60 s
        assert "ETA 1:00" in prog.lines()[0]
