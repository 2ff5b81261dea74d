"""Exports are never silently empty or wrong (issue 30 item 2): `--csv`, `--jsonl` and `--vllm-json` are
defined for every run kind that sent measured requests (speed, a rate, a rate list, a sweep, a trace replay,
sessions) and hold its requests' figures; for a run that sent none (a quality run, a run stopped before its
first request) they are refused before anything is written, naming the run and its kind.

`rigbench report RATE_RUN --vllm-json x.json` used to write `completed 0, duration 0.0, mean_ttft_ms 0.0`
and exit 0: every kind below asserts its file holds its requests.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rigbench.records import LoadRequest, LoadWindow, SpeedRequest
from rigbench.store import RunHeader, RunReader, RunWriter
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.unit.cli_inproc import Result, invoke

TRACE = Path(__file__).parent.parent / "fixtures" / "traces" / "mooncake_sample.jsonl"
FAST = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=1), output_tokens=16)
ARGS = ["--no-sanity", "--allow-untrusted", "--allow-busy-host"]

# run kind -> its flags, and the vLLM files it writes (one per benchmark: the speed requests, or a load window)
KINDS: dict[str, tuple[list[str], list[str]]] = {
    "speed": (["--scenarios", "chat_short", "--repetitions", "2", "--warmup", "1"], ["x.json"]),
    "rate": (["--rate", "40", "--requests", "6", "--output-tokens", "8"], ["x.json"]),
    "rate list": (["--rate", "40,20", "--requests", "6", "--output-tokens", "8"], ["x.r0.json", "x.r1.json"]),
    "sweep": (["--sweep", "--sweep-points", "2", "--requests", "6", "--output-tokens", "8"],
              ["x.saturation.json", "x.r0.json", "x.r1.json"]),
    "trace replay": (["--trace", str(TRACE)], ["x.json"]),
    "sessions": (["--rate", "20", "--sessions", "2", "--turns", "2", "--output-tokens", "8"], ["x.json"]),
}


def rigbench(*args: str) -> Result:
    res = invoke(*args)
    assert res.traceback is None, res.traceback
    return res


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One run of each kind against one emulator, each with --csv and --jsonl from `rigbench run`."""
    base = tmp_path_factory.mktemp("kinds")
    out: dict[str, Path] = {}
    with EmulatorProcess(FAST) as emu:
        for kind, (flags, _) in KINDS.items():
            d = base / kind.replace(" ", "_")
            d.mkdir()
            res = rigbench("run", "--endpoint", emu.url, *ARGS, *flags, "--out", str(d / "runs"),
                           "--csv", str(d / "run.csv"), "--jsonl", str(d / "run.jsonl"))
            assert res.code == 0, (kind, res.stdout[-2000:], res.stderr)
            (out[kind],) = [p for p in (d / "runs").iterdir() if p.is_dir()]
    return out


def _requests(run: Path) -> list[SpeedRequest | LoadRequest]:
    reader = RunReader(run)
    speed = [r for r in reader.records("speed_request", SpeedRequest)]
    return [*speed, *reader.records("load_request", LoadRequest)]


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_run_kind_exports_its_requests_in_every_format(kind: str, runs: dict[str, Path]) -> None:
    run = runs[kind]
    reqs = _requests(run)
    assert reqs and all(q.result.ok for q in reqs)
    # CSV and JSON lines from the run: one row per request, targets beside what was sent
    rows = list(csv.DictReader((run.parent.parent / "run.csv").open()))
    lines = [json.loads(x) for x in (run.parent.parent / "run.jsonl").read_text().splitlines()]
    assert len(rows) == len(lines) == len(reqs), kind
    for row in lines:
        assert row["input_tokens_target"] >= 1 and row["output_tokens"] >= 1 and row["ttft_s"] > 0, (kind, row)
        assert row["input_tokens_server"] is not None  # the emulator reports usage: what it counted
    # vLLM's result JSON: one file per benchmark the run holds, each with its requests' figures
    target = run.parent.parent / "x.json"
    res = rigbench("report", str(run), "--vllm-json", str(target))
    assert res.code == 0, (kind, res.stderr)
    names = sorted(p.name for p in target.parent.glob("x*.json"))
    assert names == sorted(KINDS[kind][1]), (kind, names)
    windows = {w.window: w for w in RunReader(run).records("load_window", LoadWindow)}
    total = 0
    for name in names:
        data = json.loads((target.parent / name).read_text())
        n = len(data["ttfts"])
        total += n
        assert n > 0 and data["completed"] == n and data["failed"] == 0, (kind, name)
        assert data["duration"] > 0 and data["mean_ttft_ms"] > 0 and data["median_e2el_ms"] > 0, (kind, name)
        assert data["request_throughput"] > 0 and data["total_input_tokens"] > 0, (kind, name)
        assert data["p90_ttft_ms"] <= data["p95_ttft_ms"] <= data["p99_ttft_ms"], (kind, name)
        unit = name.split(".")[1] if name.count(".") == 2 else None
        w = windows.get(unit or "") or (next(iter(windows.values())) if len(windows) == 1 else None)
        assert data["rigbench_kind"].startswith(kind)
        if w is not None and w.mode == "rate" and w.sessions is None:
            assert data["request_rate"] == w.offered_rate_rps and data["rigbench_window"] == w.window
        else:  # a burst, a trace, sessions, speed: no fixed request rate, as vLLM writes "inf"
            assert data["request_rate"] == "inf"
    measured = [q for q in reqs if not getattr(q, "warmup", False)]
    assert total == len(measured), kind  # every measured request once, warm-up left out


def _quality_run(tmp: Path) -> Path:
    d = tmp / "quality-run"
    w = RunWriter(d, RunHeader(run_id="quality-run", created_at="2026-01-01T00:00:00+00:00", rigbench_version="0",
                               plan={"suites": {"mmlu_pro": {"questions_per_subject": 3}}}))
    w.finish("complete")
    return d


def test_a_run_without_speed_or_load_requests_is_refused_naming_its_kind_before_anything_is_written(
        tmp_path: Path, runs: dict[str, Path]) -> None:
    quality = _quality_run(tmp_path)
    for option in ("--vllm-json", "--csv", "--jsonl"):
        out = tmp_path / f"out{option}"
        res = rigbench("report", str(quality), option, str(out), "--html", str(tmp_path / "r.html"))
        assert res.code == 2, (option, res.stdout, res.stderr)
        msg = " ".join(res.stderr.split())
        assert f"{option}: quality-run is a mmlu_pro run: it holds no speed or load requests" in msg, msg
        assert len(res.stderr.strip().splitlines()) <= 3
        assert not out.exists() and not (tmp_path / "r.html").exists()  # refused before any file
    # beside a run that has requests, the CSV holds those and names the one without
    table = tmp_path / "both.csv"
    res = rigbench("report", str(runs["rate"]), str(quality), "--csv", str(table))
    assert res.code == 0, res.stderr
    assert len(list(csv.DictReader(table.open()))) == len(_requests(runs["rate"]))
    said = " ".join(res.stdout.split())
    assert "per-request export: quality-run is a mmlu_pro run: it holds no speed or load requests" in said
    assert "it has no rows" in said
    # `rigbench run` refuses it before the run starts (nothing listens on port 9: it never attached)
    res = rigbench("run", "--endpoint", "http://127.0.0.1:9/v1", "--suite", "agent_probes", "--csv",
                   str(tmp_path / "r.csv"), "--out", str(tmp_path / "none"))
    assert res.code == 2 and "--csv: this run's suites (agent_probes) send no speed or load requests" in " ".join(
        res.stderr.split()), res.stderr
    assert "cannot reach" not in res.stderr and not (tmp_path / "none").exists()
