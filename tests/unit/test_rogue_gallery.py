"""The rogue-server gallery, end to end: `rigbench run --endpoint` against each rogue persona of
the emulator must end UNTRUSTED, exit 1, with a reason that names what was seen; the healthy
persona must stay trusted (exit 0). One row per adversary of docs/honesty.md's table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from rigbench.testing import EmulatorProcess, EmulatorScript
from rigbench.testing._rogue import ROGUES
from rigbench.testing._script import Delay

# adversary -> words the run's reasons must contain (what was seen, in the user's terms)
EXPECTED_REASON = {
    "canned": "identical answer",
    "echo": "echoes the prompt",
    "fluent_wrong": "known-answer questions right, below",
    "shuffled": "right answers to other questions",
    "random_tokens": "script_salad",
    "ngram_loop": "identical answer",
    "cached": "identical answer",
    "inflated_usage": "output tokens are inflated",
    "lying_timings": "timings contradict the client's clock",
    "long_prompt_garbage": "measured outputs look like gibberish",
}


class Outcome(NamedTuple):
    res: subprocess.CompletedProcess[str]
    header: dict[str, Any]
    run_dir: Path


def _run(persona: str, out: Path) -> Outcome:
    # 5 ms per token: long enough that a 4x timing lie stands out of a loaded machine's noise
    script = EmulatorScript(persona=persona, ttft=Delay(mean_ms=5.0), itl=Delay(mean_ms=5.0))  # type: ignore[arg-type]
    with EmulatorProcess(script) as emu:
        res = subprocess.run(
            [sys.executable, "-m", "rigbench", "run", "--endpoint", emu.url, "--scenarios", "chat_short,code_generation",
             "--repetitions", "2", "--warmup", "0", "--out", str(out),
             # three runs at a time make each other's host busy by construction; the busy-host check
             # has its own adversary and control (test_host_conditions.py)
             "--allow-busy-host"],
            capture_output=True, text=True, timeout=300,
            env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
                 **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}})  # a worktree's own code
    [run_dir] = list(out.iterdir())
    return Outcome(res, json.loads((run_dir / "run.json").read_text()), run_dir)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every persona's run, three at a time (each run is mostly the CLI's import time)."""
    base = tmp_path_factory.mktemp("gallery")
    with ThreadPoolExecutor(3) as pool:
        futures = {p: pool.submit(_run, p, base / p) for p in ("healthy", *ROGUES)}
        return {p: f.result() for p, f in futures.items()}


def test_rogue_gallery_names_every_adversary() -> None:
    assert set(EXPECTED_REASON) == set(ROGUES)


@pytest.mark.parametrize("rogue", ROGUES)
def test_every_rogue_ends_untrusted_with_a_reason_naming_it(rogue: str, outcomes: dict[str, Outcome]) -> None:
    res, header, _ = outcomes[rogue]
    assert res.returncode == 1, (res.stdout[-3000:], res.stderr[-2000:])
    trust = header["trust"]
    assert isinstance(trust, dict) and trust["trusted"] is False
    reasons = " | ".join(trust["reasons"])
    assert EXPECTED_REASON[rogue] in reasons, reasons
    assert "UNTRUSTED" in res.stdout and "Traceback" not in res.stderr


def test_a_healthy_server_stays_trusted(outcomes: dict[str, Outcome]) -> None:
    res, header, run_dir = outcomes["healthy"]
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-2000:])
    trust = header["trust"]
    assert isinstance(trust, dict) and trust["trusted"] is True, trust
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    [gate] = [r for r in records if r["kind"] == "sanity"]
    assert gate["question_seed"] is not None and len(gate["answers"]) == 12
    [traffic] = [r for r in records if r["kind"] == "traffic_check"]
    # the honest checks really ran: recounted usage through /tokenize, timings against the clock
    assert traffic["usage_method"] == "tokenize" and traffic["usage_checked"] > 0
    assert traffic["timings_checked"] > 0 and traffic["outputs"] == 4


def test_emulate_names_the_rogues_on_a_typo() -> None:
    res = subprocess.run([sys.executable, "-m", "rigbench", "emulate", "--rogue", "cannned"], capture_output=True,
                         text=True, timeout=120, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "HOME": str(Path.home())})
    assert res.returncode == 2 and "unknown rogue 'cannned'; choose one of canned, echo," in res.stderr
    assert "Traceback" not in res.stderr
