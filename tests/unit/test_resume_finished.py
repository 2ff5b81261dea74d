"""Resume of a finished run (issue 22, item 6): changed options are refused as for an unfinished
run, and `--retry-failed` redoes the failed requests and says how many.

Before: `--resume` of a finished run with another `--repetitions`, `--endpoint`, `--scenarios` or
`--set` said "already complete" (exit 0), and a finished run's failed requests could never be redone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault
from tests.conftest import free_port
from tests.unit.cli_inproc import invoke

FAST = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=16)
ARGS = ["--no-sanity", "--allow-untrusted", "--scenarios", "chat_short", "--warmup", "0"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("finished")
    with EmulatorProcess(FAST) as emu:
        res = invoke("run", "--endpoint", emu.url, *ARGS, "--repetitions", "2", "--out", str(out))
        assert res.code == 0, res.stderr
    (run_dir,) = out.iterdir()
    return run_dir, emu.url


@pytest.mark.parametrize(("args", "flag"), [
    (["--repetitions", "3"], "--repetitions"), (["--endpoint", "http://127.0.0.1:9/v1"], "--endpoint"),
    (["--scenarios", "code_generation"], "--scenarios"), (["--set", "speed.temperature=0.5"], "--set"),
])
def test_a_finished_run_refuses_changed_options(finished: tuple[Path, str], args: list[str], flag: str) -> None:
    run_dir, _ = finished
    before = (run_dir / "records.jsonl").read_bytes()
    res = invoke("run", "--resume", str(run_dir), *args)
    assert res.traceback is None and res.code == 2, (res.code, res.stdout, res.stderr)
    assert f"cannot resume {run_dir}" in " ".join(res.stderr.split()) and flag in res.stderr
    assert (run_dir / "records.jsonl").read_bytes() == before


def test_a_finished_run_resumed_as_it_was_is_left_untouched(finished: tuple[Path, str]) -> None:
    run_dir, _ = finished
    before = (run_dir / "run.json").read_bytes(), (run_dir / "records.jsonl").read_bytes()
    res = invoke("run", "--resume", str(run_dir))
    assert res.code == 0 and "already complete" in res.stdout
    assert ((run_dir / "run.json").read_bytes(), (run_dir / "records.jsonl").read_bytes()) == before


def test_retry_failed_redoes_the_failed_requests_of_a_finished_run(tmp_path: Path) -> None:
    port = free_port()
    failing = FAST.model_copy(update={"faults": [Fault(kind="http_status", status=503, message="busy", every=2)]})
    with EmulatorProcess(failing, port=port) as emu:
        res = invoke("run", "--endpoint", emu.url, *ARGS, "--repetitions", "4", "--out", str(tmp_path))
        assert res.code == 0, res.stderr
    (run_dir,) = tmp_path.iterdir()
    reader = RunReader(run_dir)
    assert reader.header.status == "complete"
    assert sum(1 for r in reader.raw_records("speed_request") if r["result"]["error"]) == 2
    with EmulatorProcess(FAST, port=port):  # the server is healthy again
        res = invoke("run", "--resume", str(run_dir), "--retry-failed", "--allow-untrusted")
        assert res.code == 0 and res.traceback is None, res.stderr
        assert "--retry-failed: redoing 2 unit(s) with a failed request" in " ".join(res.stdout.split())
        again = invoke("run", "--resume", str(run_dir), "--retry-failed", "--allow-untrusted")  # control: none left
        assert again.code == 0 and "none failed" in again.stdout, again.stdout
    reader = RunReader(run_dir)
    assert reader.header.status == "complete" and not reader.damage
    latest = list(reader.raw_records("speed_request"))
    assert len(latest) == 4 and not any(r["result"]["error"] for r in latest)
    assert len(list(reader.raw_records("speed_request", history=True))) == 6  # the failures kept as history


def test_retry_failed_needs_a_run_to_resume() -> None:
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--retry-failed")
    assert res.code == 2 and "--retry-failed" in res.stderr and "--resume" in res.stderr
