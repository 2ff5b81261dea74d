"""What `rigbench run` records of its options (`plan.cli_options` in run.json) is what a resume compares.

`expected.json` was written by rigbench before the options became one typed model (issue 24, the end
of `dict(locals())`): a recorded value that changes, or a key that goes, means a run started earlier is
refused on resume ("this command changes plan.cli_options.X"). A key may be added (an option added
later is not compared with a run that did not record it), so the pin is checked key by key.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from rigbench.runner import RunConfig
from rigbench.store import RunHeader, now_utc
from tests.unit.cli_inproc import invoke

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "recorded_options"
EXPECTED: dict[str, dict[str, Any]] = json.loads((HERE / "expected.json").read_text())

CASES = {
    "defaults": "",
    "embedded, every rig and speed flag": (
        "--suite speed,agent_tools --profile full --scenarios chat_short,summarization --repetitions 2 --warmup 0 "
        "--max-requests 5000 --concurrency 1,2 --model-file embedded --draft-model embedded --spec-type draft-simple "
        "--draft-max 4 --spec-synth-len 3.5 --ctx-per-slot 4096 --threads 2 --port 8123 --engine-arg=--no-mmap "
        "--engine-arg=--flash-attn --seed 7 --no-sanity --sanity-max-tokens 64 --sanity-seed 3 "
        "--bandwidth-gbs 100 --idle-timeout 30 --request-timeout 90 --tool-trials 2 --set speed.temperature=0.5 "
        "--allow-busy-host --label lab --allow-untrusted"),
    "endpoint, quality and agent flags": (
        "--endpoint http://user:pw@127.0.0.1:9/v1/ --model m --api-key-env RIGBENCH_TEST_KEY "
        "--suite mmlu_pro,packs,effort,agent_bfcl --mmlu-data tests/fixtures/mmlu_pro --mmlu-questions 3 "
        "--mmlu-subjects math,law --pack multilingual --effort-levels none,high --bfcl-per-category 2 "
        "--bfcl-trials 3 --bfcl-data /tmp/bfcl --agent-tasks cart_bugs --task-trials 1 --max-turns 5 "
        "--task-max-tokens 256 --sanity-max-tokens 32"),
    "vllm launch": "--engine vllm --kv-cache-gib 2 --ctx-per-slot 2048 --spec-type ngram --draft-max 3",
    "endpoint, rate mode": (
        "--endpoint http://127.0.0.1:9/v1 --rate 5 --arrival gamma --burstiness 0.5 --requests 20 "
        "--max-concurrency 4 --slo ttft=500ms,e2e=10s --slo-attainment 0.9 --input-tokens uniform:10,20 "
        "--output-tokens 16 --csv req.csv --jsonl req.jsonl"),
}


class _Captured(Exception):
    """Raised by the stand-in runner: the config was built, nothing is measured."""


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[RunConfig]:
    import rigbench.runner

    got: list[RunConfig] = []

    async def fake_execute_run(cfg: RunConfig, *args: Any, **kw: Any) -> Any:
        got.append(cfg)
        raise _Captured("captured")

    monkeypatch.setattr(rigbench.runner, "execute_run", fake_execute_run)
    monkeypatch.setenv("RIGBENCH_TEST_KEY", "secret")
    return got


def _run(captured: list[RunConfig], *args: str) -> RunConfig:
    n = len(captured)
    res = invoke("run", *args)
    assert len(captured) == n + 1, res.stderr + str(res.traceback)
    return captured[-1]


def _pinned(recorded: dict[str, Any] | None, expected: dict[str, Any]) -> dict[str, Any]:
    """The recorded options the pin names (an option added later is recorded too, and not compared with a
    run that did not record it: the runner skips a key the old run lacks)."""
    assert recorded is not None
    return {k: recorded[k] for k in expected if k in recorded}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_recorded_options_are_unchanged_and_a_resume_records_them_again(
        case: str, captured: list[RunConfig], tmp_path: Path) -> None:
    first = _run(captured, *shlex.split(CASES[case]), "--out", str(tmp_path / "runs"))
    assert _pinned(first.cli_options, EXPECTED[case]) == EXPECTED[case]
    # a run holding them (as an older rigbench left it when killed) resumes with the same recorded settings
    run_dir = tmp_path / "runs" / "old"
    run_dir.mkdir(parents=True)
    header = RunHeader(run_id="old", created_at=now_utc(), rigbench_version="0", plan=first.recorded())
    (run_dir / "run.json").write_text(header.model_dump_json())
    (run_dir / "records.jsonl").write_text("")
    again = _run(captured, "--resume", str(run_dir))
    assert _pinned(again.cli_options, EXPECTED[case]) == EXPECTED[case]
    assert again.cli_options == first.cli_options  # the options added since, too
    assert again.recorded() == first.recorded()
    assert again.settings == first.settings


def test_every_pinned_case_is_checked() -> None:
    assert set(EXPECTED) == set(CASES)
