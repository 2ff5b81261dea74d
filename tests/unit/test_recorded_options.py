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
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
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


# Output paths the pin holds that are no longer recorded: they say where files go, not what is measured, and
# a resume ignores them in a run that holds them (test_an_export_path_is_not_a_setting_...).
OUTPUT_ONLY = ("csv", "jsonl")


def _pinned(recorded: dict[str, Any] | None, expected: dict[str, Any]) -> dict[str, Any]:
    """The recorded options the pin names (an option added later is recorded too, and not compared with a
    run that did not record it: the runner skips a key the old run lacks)."""
    assert recorded is not None
    assert not set(OUTPUT_ONLY) & set(recorded)
    return {k: recorded[k] for k in expected if k in recorded}


def _expected(case: str) -> dict[str, Any]:
    return {k: v for k, v in EXPECTED[case].items() if k not in OUTPUT_ONLY}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_recorded_options_are_unchanged_and_a_resume_records_them_again(
        case: str, captured: list[RunConfig], tmp_path: Path) -> None:
    first = _run(captured, *shlex.split(CASES[case]), "--out", str(tmp_path / "runs"))
    assert _pinned(first.cli_options, EXPECTED[case]) == _expected(case)
    # a run holding them (as an older rigbench left it when killed) resumes with the same recorded settings
    run_dir = tmp_path / "runs" / "old"
    run_dir.mkdir(parents=True)
    header = RunHeader(run_id="old", created_at=now_utc(), rigbench_version="0", plan=first.recorded())
    (run_dir / "run.json").write_text(header.model_dump_json())
    (run_dir / "records.jsonl").write_text("")
    again = _run(captured, "--resume", str(run_dir))
    assert _pinned(again.cli_options, EXPECTED[case]) == _expected(case)
    assert again.cli_options == first.cli_options  # the options added since, too
    assert again.recorded() == first.recorded()
    assert again.settings == first.settings


def test_every_pinned_case_is_checked() -> None:
    assert set(EXPECTED) == set(CASES)


def test_an_export_path_is_not_a_setting_so_a_resume_may_write_another_file(tmp_path: Path) -> None:
    """`--csv`/`--jsonl` say where per-request files go: a resume that names other files goes on and writes
    them. The run resumed is one an older rigbench left (its run.json records `csv`/`jsonl` among the settings,
    as they were until now). Control: a changed measurement setting (--requests) is still refused."""
    flags = ["--endpoint", "", "--no-sanity", "--rate", "50", "--requests", "4", "--input-tokens", "16",
             "--output-tokens", "8", "--allow-untrusted"]
    with EmulatorProcess(EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=8)) as emu:
        flags[1] = emu.url
        first = invoke("run", *flags, "--csv", str(tmp_path / "a.csv"), "--out", str(tmp_path / "runs"))
        assert first.code == 0, first.stderr
        [done] = list((tmp_path / "runs").iterdir())
        plan = json.loads((done / "run.json").read_text())["plan"]
        assert "csv" not in plan["cli_options"] and "jsonl" not in plan["cli_options"]
        plan["cli_options"].update(csv=str(tmp_path / "a.csv"), jsonl=None)  # as an older rigbench recorded them

        def killed(name: str) -> Path:
            run_dir = tmp_path / "runs" / name
            run_dir.mkdir()
            (run_dir / "run.json").write_text(RunHeader(run_id=name, created_at=now_utc(), rigbench_version="0",
                                                        plan=plan).model_dump_json())
            (run_dir / "records.jsonl").write_text("")
            return run_dir

        old = killed("old")
        resumed = invoke("run", "--resume", str(old), "--csv", str(tmp_path / "b.csv"), "--jsonl",
                         str(tmp_path / "b.jsonl"), "--allow-untrusted")
        refused = invoke("run", "--resume", str(killed("other")), "--requests", "5")
    assert resumed.code == 0, resumed.stderr
    assert json.loads((old / "run.json").read_text())["status"] == "complete"
    assert len((tmp_path / "b.csv").read_text().splitlines()) == 1 + 4  # header + one row per request
    assert len((tmp_path / "b.jsonl").read_text().splitlines()) == 4
    assert refused.code == 2 and "it was started with --requests 4 and this command gives --requests 5" in \
        " ".join(refused.stderr.split()), refused.stderr
