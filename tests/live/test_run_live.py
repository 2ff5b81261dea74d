"""`rigbench run` end to end against the real embedded llama-server + SmolLM2-135M."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rigbench.store import RunReader

from ..children import spawned
from ..conftest import start_llama_server

pytestmark = pytest.mark.live

# --allow-busy-host: these tests are about what a run records, not the host it ran on. On the 2-core CI
# VM the hypervisor now and then takes 0.1-0.2 cores (steal) in a window, which rigbench rightly calls
# busy; the busy-host check has its own adversaries and quiet controls (test_host_live.py).
BUSY_OK = ["--allow-busy-host"]
QUICK = ["--scenarios", "chat_short", "--repetitions", "2", "--warmup", "1", *BUSY_OK]


def rigbench(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def only_run(out: Path) -> Path:
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def test_run_embedded_records_startup_fingerprint_and_speed(tmp_path: Path) -> None:
    md = tmp_path / "report.md"
    res = rigbench("run", *QUICK, "--out", str(tmp_path / "runs"), "--markdown", str(md))
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir = only_run(tmp_path / "runs")
    reader = RunReader(run_dir)
    assert reader.header.status == "complete"
    assert reader.header.trust is not None and reader.header.trust.trusted, reader.header.trust
    fp = reader.header.fingerprint
    assert fp is not None and fp.argv is not None
    assert fp.engine == "llamacpp" and fp.mode == "launched"
    assert fp.model.sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    assert fp.argv[0].endswith("llama-server") and "--jinja" in fp.argv
    assert fp.chat_template_sha256 and fp.context_length and fp.slots == 1
    startup = next(reader.raw_records("startup"))
    assert 0 < startup["spawn_to_healthy_s"] <= startup["spawn_to_first_completion_s"]
    reqs = [r for r in reader.raw_records("speed_request") if not r["warmup"]]
    assert len(reqs) == 2
    for r in reqs:
        # exact input length on the rendered prompt, confirmed by the server's own count
        assert r["input_tokens_measured"] == 128
        assert r["result"]["usage"]["prompt_tokens"] == 128
        assert r["result"]["usage"]["completion_tokens"] == 64  # forced output length
    # issue 16: the binary passed its smoke test on this CPU, and the roofline needs no --bandwidth-gbs
    assert fp.engine_binary is not None and fp.host is not None and fp.host.memory_bandwidth is not None
    assert fp.engine_binary.smoke_test == "passed" and fp.engine_binary.fallback == "none"
    assert (fp.host.memory_bandwidth.host_gb_s or 0) > 0
    text = md.read_text()
    assert "Decode roofline" in text and "probed" in text and "Decode efficiency per row" in text
    assert reader.source_data_id in text and "chat_short" in text
    assert "chat_long_context" not in text  # not asked for
    # re-render from disk
    again = rigbench("report", str(run_dir))
    assert again.returncode == 0 and reader.source_data_id in again.stdout


def test_kill_9_leaves_a_readable_partial_run_that_resumes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    env = {**os.environ, "COLUMNS": "160"}
    with spawned([sys.executable, "-m", "rigbench", "run", "--scenarios", "chat_short,code_generation",
                  "--repetitions", "3", "--warmup", "0", *BUSY_OK, "--out", str(out)],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env) as proc:  # killed on any failure
        deadline = time.monotonic() + 300
        records = None
        while time.monotonic() < deadline:
            dirs = [p for p in out.iterdir()] if out.exists() else []
            if dirs and (dirs[0] / "records.jsonl").exists():
                records = dirs[0] / "records.jsonl"
                if sum(1 for line in records.read_text().splitlines() if '"speed_batch"' in line) >= 2:
                    break
            time.sleep(0.2)
        assert records is not None, "the run never started writing records"
        os.killpg(proc.pid, signal.SIGKILL)  # the engine too: nothing gets to clean up
        proc.wait()
    run_dir = records.parent
    reader = RunReader(run_dir)
    assert reader.display_status == "incomplete"
    done_before = {r["unit_id"] for r in reader.raw_records("speed_batch")}
    assert len(done_before) >= 2
    shown = rigbench("report", str(run_dir))
    assert shown.returncode == 0, shown.stderr
    assert "incomplete" in shown.stdout
    resumed = rigbench("run", "--resume", str(run_dir), "--scenarios", "chat_short,code_generation",
                       "--repetitions", "3", "--warmup", "0", *BUSY_OK, "--out", str(out))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    reader = RunReader(run_dir)
    assert reader.header.status == "complete"
    batches = [r["unit_id"] for r in reader.raw_records("speed_batch")]
    assert len(batches) == len(set(batches)) == 6  # nothing redone twice, nothing missing
    assert done_before <= set(batches)
    summary = json.loads((rigbench("report", str(run_dir), "--json", str(tmp_path / "a.json")).returncode == 0
                         and (tmp_path / "a.json").read_text()) or "{}")
    assert {row["scenario"]: row["requests"] for row in summary["speed"]["rows"]} == {
        "chat_short": 3, "code_generation": 3}


def test_attach_mode_against_a_second_llama_server(tmp_path: Path) -> None:
    proc, base = start_llama_server(Path(os.environ["RIGBENCH_LLAMA_SERVER"]), Path(os.environ["RIGBENCH_LLAMA_MODEL"]),
                                    tmp_path / "srv.log", slots=1)
    try:
        res = rigbench("run", "--endpoint", base, *QUICK, "--out", str(tmp_path / "runs"))
        assert res.returncode == 0, res.stdout + res.stderr
        reader = RunReader(only_run(tmp_path / "runs"))
        fp = reader.header.fingerprint
        assert fp is not None and fp.mode == "attached" and fp.engine == "llamacpp"
        assert fp.argv is None and any("argv" in u for u in fp.unknown)
        assert "launch flags were not recorded" in res.stdout
    finally:
        proc.stop()


def test_start_failures_name_the_command_and_log(tmp_path: Path) -> None:
    bad = rigbench("run", *QUICK, "--out", str(tmp_path / "runs"), "--engine-arg=--no-such-flag-xyz")
    assert bad.returncode == 2
    assert "exited with code" in bad.stderr and "--no-such-flag-xyz" in bad.stderr and "engine.log" in bad.stderr
    missing = rigbench("run", *QUICK, "--out", str(tmp_path / "runs2"), "--llama-server", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "not an executable file" in missing.stderr


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = rigbench("run", *QUICK, "--out", str(tmp_path / "runs"), "--port", str(port))
    assert res.returncode == 2
    assert f"port {port}" in res.stderr and "already in use" in res.stderr and "command:" in res.stderr


def _two_runs_on_one_slot(tmp_path: Path, *, repetitions: int, warmup: int) -> Path:
    """Two runs with the same seed, one after the other, on one llama-server with one slot (so its
    prompt cache holds the first run's prompts); the second run's directory."""
    proc, base = start_llama_server(Path(os.environ["RIGBENCH_LLAMA_SERVER"]), Path(os.environ["RIGBENCH_LLAMA_MODEL"]),
                                    tmp_path / "srv.log", slots=1)
    args = ["run", "--endpoint", base, "--scenarios", "chat_short", "--repetitions", str(repetitions),
            "--warmup", str(warmup), "--no-sanity", "--allow-untrusted", "--seed", "7", *BUSY_OK]
    try:
        for out in ("first", "second"):
            res = rigbench(*args, "--out", str(tmp_path / out))
            assert res.returncode == 0, res.stdout + res.stderr
    finally:
        proc.stop()
    return only_run(tmp_path / "second")


def test_a_normal_run_is_not_flagged_for_the_prefix_its_prompts_share(tmp_path: Path) -> None:
    """False alarm guard for the prefix-cache check (honesty/_prefix_cache.py): llama-server's slot
    cache reuses the chat template's opening and `[request <nonce>-` of every prompt, within a run
    and from the run before; that share is by design and must not be flagged."""
    reader = RunReader(_two_runs_on_one_slot(tmp_path, repetitions=3, warmup=1))
    reqs = [r for r in reader.raw_records("speed_request") if not r["warmup"]]
    figures = [(r["result"]["timings"]["cache_n"], r["input_tokens_shared_max"]) for r in reqs]
    assert all(0 < cached <= shared for cached, shared in figures), figures  # reused, within the design share
    [check] = list(reader.raw_records("traffic_check"))
    [row] = check["prefix_cache"]
    assert row["source"] == "timings" and row["beyond_tokens"] == 0, (row, figures)
    assert check["warnings"] == [] and not any("prefix cache" in r for r in check["reasons"]), check


def test_a_repeated_run_is_not_served_from_the_prefix_cache(tmp_path: Path) -> None:
    """Adversary: llama.cpp's prompt cache (vLLM's and SGLang's prefix caches alike). Two runs with
    the same seed used to send the same prompts, and the server then prefilled 1 token of 128 on
    the second run (seen in benchmarks/peers.py): TTFT measured a cache hit, not a prefill."""
    [req] = RunReader(_two_runs_on_one_slot(tmp_path, repetitions=1, warmup=0)).raw_records("speed_request")
    # the chat template's opening (about 30 tokens) is common to every request and may be reused;
    # everything after the per-run opening must be prefilled again (before the fix: 1 token)
    assert req["result"]["timings"]["prompt_n"] >= 64, req["result"]["timings"]  # 89 of 128 when measured


def test_the_readmes_full_profile_line_runs_on_the_default_rig_skipping_what_does_not_fit(tmp_path: Path) -> None:
    """Issue 30 item 6: `rigbench run --profile full` on SmolLM2 (8,192 tokens of context) exited 1, UNTRUSTED,
    because scenarios that do not fit were a preflight error. They are skipped, with the reason, and the rest
    is measured and trusted. One repetition of chat_short and summarization (which does not fit): this is about
    the verdict, not the figures, and the full profile's 8,192-token prefill and 1,024-token output would cost
    minutes of CI."""
    out = tmp_path / "runs"
    res = rigbench("run", "--profile", "full", "--scenarios", "chat_short,summarization", "--repetitions", "1",
                   "--warmup", "0", *BUSY_OK, "--out", str(out))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    reader = RunReader(only_run(out))
    assert reader.header.trust is not None and reader.header.trust.trusted, reader.header.trust
    skipped = {r["scenario"]: r["reason"] for r in reader.raw_records("speed_skip")}
    assert "summarization" in skipped and "8192 per request" in skipped["summarization"]
    measured = {r["scenario"] for r in reader.raw_records("speed_request")}
    assert "chat_short" in measured and not measured & set(skipped)
    flat = " ".join(res.stdout.split())
    assert "verdict trusted" in flat and "summarization: skipped: needs 16512 tokens of context" in flat
    # control: nothing left to measure is still a verdict (the gate skipped, which untrusts too, to save its time:
    # the reason asserted is the preflight's)
    none = rigbench("run", "--profile", "full", "--scenarios", "summarization", "--no-sanity", *BUSY_OK, "--out",
                    str(tmp_path / "n"))
    assert none.returncode == 1
    trust = RunReader(only_run(tmp_path / "n")).header.trust
    assert trust is not None and any("no speed figure can be measured" in r for r in trust.reasons), trust
