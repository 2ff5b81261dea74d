"""A full disk stops the run with a clear error, a resumable run, and nothing lost (issue 22, item 3).

Adversary: `--out` on a 300 KiB tmpfs that fills mid-run. Before: three chained tracebacks, exit 1,
run.json left `running`, a torn last line. Now: one error naming the file and the free space,
run.json marked interrupted (rewritten in place when there is no room for a new copy), and once
space is freed, `--resume` repairs the torn line and completes the run with no unit twice.
Needs root to mount a tmpfs; skipped only where mounting is refused.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.needs import missing
from tests.unit.cli_inproc import invoke

FAST = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=64)
REPS = 300


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        missing(f"cannot mount a tmpfs here ({res.stderr.strip()}): the full-disk case needs root")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_full_disk_interrupts_the_run_and_resume_completes_it_once_space_is_freed(tiny_disk: Path) -> None:
    out = tiny_disk / "runs"
    with EmulatorProcess(FAST) as emu:
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--scenarios", "chat_short",
                     "--repetitions", str(REPS), "--warmup", "0", "--out", str(out))
        assert res.traceback is None, res.traceback[-3000:]
        assert res.code == 2, (res.code, res.stderr)
        (run_dir,) = out.iterdir()
        msg = " ".join(res.stderr.split())
        assert f"cannot write {run_dir / 'records.jsonl'}: No space left on device" in msg, msg
        assert "bytes free there" in msg and f"rigbench run --resume {run_dir}" in msg
        reader = RunReader(run_dir)
        assert reader.header.status == "interrupted" and "No space left" in (reader.header.error or "")
        written = len(list(reader.raw_records("speed_batch")))
        assert 0 < written < REPS
        rep = invoke("report", str(run_dir))
        assert rep.code == 0 and rep.traceback is None and "incomplete" in rep.stdout

        subprocess.run(["mount", "-o", "remount,size=8m", str(tiny_disk)], check=True)  # space freed
        res = invoke("run", "--resume", str(run_dir), "--allow-untrusted")
        assert res.code == 0 and res.traceback is None, res.stderr
    reader = RunReader(run_dir)
    batches = [r["unit_id"] for r in reader.raw_records("speed_batch", history=True)]
    assert reader.header.status == "complete" and len(batches) == len(set(batches)) == REPS
    assert reader.damaged_records == 0  # the torn line was repaired, not kept
    assert not reader.damage
