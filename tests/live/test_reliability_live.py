"""Outside input and stop signals against the real embedded llama-server + SmolLM2-135M (issue 34).

- A trace line longer than what the real server serves per request is refused, naming the line, before
  anything reaches the server (the known-answer gate included): its prompt-token counter stays at zero.
  Control: the same trace without that line runs.
- SIGTERM while a launched llama-server answers the gate ends the run within seconds, marked
  interrupted, with the engine stopped (no llama-server left behind); the run then resumes to the end.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rigbench.cli._signals import GRACE_S
from rigbench.store import RunReader

from ..children import spawned
from ..conftest import start_llama_server

pytestmark = pytest.mark.live

BUSY_OK = ["--allow-busy-host"]  # what is tested is the refusal and the stop, not the host


def _rigbench(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "COLUMNS": "200"})


def _prompt_tokens(base: str) -> float:
    """llama-server's own count of prompt tokens it has processed (from /metrics)."""
    with urllib.request.urlopen(base[:-3] + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r"^llamacpp:prompt_tokens_total\s+(\S+)", text, re.MULTILINE)
    assert m is not None, text[:500]
    return float(m.group(1))


def test_a_trace_line_over_the_real_servers_context_is_refused_before_anything_reaches_it(tmp_path: Path) -> None:
    proc, base = start_llama_server(Path(os.environ["RIGBENCH_LLAMA_SERVER"]), Path(os.environ["RIGBENCH_LLAMA_MODEL"]),
                                    tmp_path / "srv.log", ctx=2048, slots=1)
    try:
        trace = tmp_path / "t.jsonl"
        ok_line = '{"timestamp": 0, "input_length": 100, "output_length": 8}\n'
        trace.write_text(ok_line + '{"timestamp": 500, "input_length": 3000, "output_length": 8}\n')
        res = _rigbench("run", "--endpoint", base, "--trace", str(trace), *BUSY_OK, "--out", str(tmp_path / "runs"))
        said = " ".join(res.stderr.split())
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stdout[-1500:] + res.stderr[-1500:]
        assert f"{trace}:2: 3000 input + 8 output tokens do not fit the 2048 tokens the server serves" in said, said
        assert _prompt_tokens(base) == 0  # not one request reached it, not even the gate's
        trace.write_text(ok_line)  # control: the line that fits is replayed (the gate is not what is tested here,
        res = _rigbench("run", "--endpoint", base, "--trace", str(trace), *BUSY_OK,  # and takes minutes on a busy host)
                        "--no-sanity", "--allow-untrusted", "--out", str(tmp_path / "runs2"))
        assert res.returncode == 0, res.stdout[-1500:] + res.stderr[-1500:]
        assert _prompt_tokens(base) > 0
    finally:
        proc.stop()


def _engines_of(run_dir: Path) -> list[int]:
    """Processes still running the run's llama-server (its log path is in the command rigbench launched)."""
    fp = RunReader(run_dir).header.fingerprint
    argv = fp.argv if fp is not None and fp.argv else []
    port = argv[argv.index("--port") + 1] if "--port" in argv else None
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if port is not None and cmd and cmd[0].endswith(b"llama-server") and port.encode() in cmd:
            found.append(int(p.name))
    return found


@pytest.mark.proof
def test_sigterm_during_the_gate_of_a_launched_engine_stops_it_and_the_run_resumes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with spawned([sys.executable, "-m", "rigbench", "run", "--scenarios", "chat_short", "--repetitions", "2",
                  "--warmup", "0", *BUSY_OK, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True, env={**os.environ, "COLUMNS": "200"}) as proc:  # killed with its engine on any failure
        deadline = time.monotonic() + 300
        run_dir = None
        while time.monotonic() < deadline and proc.poll() is None:
            dirs = [p for p in out.iterdir()] if out.exists() else []
            rec = dirs[0] / "records.jsonl" if dirs else None
            if rec is not None and rec.exists() and '"startup"' in rec.read_text():
                run_dir = dirs[0]
                break  # the engine answered its first completion: the gate's questions go now
            time.sleep(0.1)
        assert run_dir is not None, f"the engine never came up: {proc.poll()}"
        assert '"sanity"' not in (run_dir / "records.jsonl").read_text()  # still in the gate
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=GRACE_S + 60)
        took = time.monotonic() - t0
    assert proc.returncode == 143 and "Traceback" not in stderr, (proc.returncode, stdout[-1500:], stderr[-1500:])
    assert took < GRACE_S + 30, took  # the engine's own stop included (SIGTERM, then SIGKILL after 10 s)
    assert f"rigbench run --resume {run_dir}" in " ".join((stdout + stderr).split())
    assert RunReader(run_dir).header.status == "interrupted"
    assert _engines_of(run_dir) == []  # the launched llama-server was stopped with the run
    res = _rigbench("run", "--resume", str(run_dir), *BUSY_OK)
    assert res.returncode == 0, res.stdout[-1500:] + res.stderr[-1500:]
    reader = RunReader(run_dir)
    assert reader.header.status == "complete" and len(list(reader.raw_records("speed_batch"))) == 2
