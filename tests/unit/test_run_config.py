"""One configuration path: `rigbench run --flags` and a plan with the same rig measure the same way,
every suite setting can be set from a plan (and from `--set`), and a bad value names its key."""

from __future__ import annotations

import dataclasses
import json
import shlex
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from rigbench.errors import UsageError
from rigbench.plan import PlanError, load_plan, plan_from_options, run_config_for
from rigbench.runner import RunConfig
from rigbench.suites import SuiteSettings
from rigbench.suites.quality import shipped_packs
from tests.unit.cli_inproc import invoke

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
MULTILINGUAL = str(shipped_packs()["multilingual"])


class _Captured(UsageError):
    """Raised by the stand-in runner: the config was built, nothing is measured."""


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[RunConfig]:
    """The RunConfig each `rigbench run` (flags or plan) would measure with."""
    import rigbench.plan._execute
    import rigbench.runner

    got: list[RunConfig] = []

    async def fake_execute_run(cfg: RunConfig, *args: Any, **kw: Any) -> Any:
        got.append(cfg)
        raise _Captured("captured")

    monkeypatch.setattr(rigbench.runner, "execute_run", fake_execute_run)
    # plan files run through plan/_execute.py, which imports execute_run at the top of the module
    monkeypatch.setattr(rigbench.plan._execute, "execute_run", fake_execute_run)
    return got


def _same_run(cli: RunConfig, plan: RunConfig) -> RunConfig:
    """The plan's config with what differs by design taken from the CLI's: where runs go, their name,
    and that a plan carries on past an untrusted rig."""
    return dataclasses.replace(plan, out_dir=cli.out_dir, label=cli.label, run_id=cli.run_id,
                               allow_untrusted=cli.allow_untrusted, cli_options=cli.cli_options)


CASES = {
    "embedded rig, speed and agent tools": (
        "--suite speed,agent_tools --scenarios chat_short --repetitions 2 --warmup 0 --concurrency 1,2 "
        "--draft-model embedded --draft-max 4 --threads 2 --seed 7 --no-sanity --tool-trials 2 --idle-timeout 30 "
        "--bandwidth-gbs 100 --sanity-max-tokens 64 --set speed.temperature=0.5",
        """\
        suites: [speed, agent_tools]
        speed: {scenarios: [chat_short], repetitions: 2, warmup: 0, concurrency: [1, 2], temperature: 0.5}
        agent: {tool_trials: 2}
        seed: 7
        sanity: false
        sanity_max_tokens: 64
        bandwidth_gb_s: 100
        deadlines: {idle_s: 30}
        rigs:
          - {name: r, embedded: {draft_model: embedded, draft_max: 4, threads: 2}}
        """),
    "endpoint, quality suites": (
        "--endpoint http://127.0.0.1:9/v1 --model m --suite mmlu_pro,packs,effort --mmlu-data tests/fixtures/mmlu_pro "
        "--mmlu-questions 3 --mmlu-subjects math,law --pack multilingual --effort-levels none,high "
        "--set packs.repetitions=2 --set 'mmlu_pro.extra_body={k: 1}'",
        """\
        suites: [mmlu_pro, packs, effort]
        mmlu_pro: {data: tests/fixtures/mmlu_pro, questions_per_subject: 3, subjects: [math, law],
                   extra_body: {k: 1}}
        packs: {packs: [multilingual], repetitions: 2}
        effort: {pack: multilingual, levels: [none, high]}
        rigs:
          - {name: r, endpoint: {base_url: "http://127.0.0.1:9/v1", model: m}}
        """),
    "endpoint, every agent flag": (
        "--endpoint http://127.0.0.1:9/v1 --suite agent_probes,agent_bfcl,agent_tools --bfcl-per-category 2 "
        "--bfcl-trials 3 --bfcl-data /tmp/bfcl --agent-tasks cart_bugs --task-trials 1 --max-turns 5 "
        "--task-max-tokens 256 --set agent.repeat_limit=4",
        """\
        suites: [agent_probes, agent_bfcl, agent_tools]
        agent: {bfcl_per_category: 2, bfcl_trials: 3, bfcl_data_dir: /tmp/bfcl, agent_tasks: [cart_bugs],
                task_trials: 1, max_turns: 5, task_max_tokens: 256, repeat_limit: 4}
        rigs:
          - {name: r, endpoint: {base_url: "http://127.0.0.1:9/v1"}}
        """),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_flags_and_the_equivalent_plan_build_the_same_run(case: str, captured: list[RunConfig],
                                                              tmp_path: Path) -> None:
    flags, plan_body = CASES[case]
    res = invoke("run", *shlex.split(flags), "--out", str(tmp_path / "cli"))
    assert res.code == 2 and "captured" in res.stderr, res.stderr + str(res.traceback)
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: p\n" + textwrap.dedent(plan_body))
    res = invoke("run", str(plan), "--out", str(tmp_path / "plan"))
    assert res.traceback is None and len(captured) == 2, res.stderr
    cli, from_plan = captured
    assert _same_run(cli, from_plan) == cli
    assert from_plan.recorded()["suites"] == cli.recorded()["suites"]  # what run.json says was run


def test_a_changed_flag_is_a_different_run(captured: list[RunConfig], tmp_path: Path) -> None:
    """The equality above is not vacuous: one setting apart is seen."""
    base = "--endpoint http://127.0.0.1:9/v1 --suite agent_tools --out " + str(tmp_path)
    invoke("run", *shlex.split(base), "--tool-trials", "2")
    invoke("run", *shlex.split(base), "--tool-trials", "3")
    assert len(captured) == 2 and captured[0] != captured[1]
    assert captured[0].recorded()["suites"]["agent"]["tool_trials"] == 2


# A value other than the default for every suite setting a plan takes (checked to cover them all).
NON_DEFAULT: dict[str, dict[str, Any]] = {
    "speed": {"profile": "full", "scenarios": ["chat_short"], "repetitions": 2, "warmup": 0,
              "concurrency": [1, 3], "temperature": 0.5},
    "mmlu_pro": {"data": "tests/fixtures/mmlu_pro", "revision": "abc123", "subjects": ["math"],
                 "questions_per_subject": 3, "sample_seed": 1, "shots": 2, "max_tokens": 100, "concurrency": 2,
                 "temperature": 0.5, "extra_body": {"k": 1}},
    "packs": {"packs": [MULTILINGUAL], "tasks": ["en_capital_50"], "repetitions": 2, "concurrency": 2,
              "max_tokens": 50, "extra_body": {"k": 1}, "allow_unconfined": True},
    "effort": {"pack": MULTILINGUAL, "tasks": ["en_capital_50"], "levels": ["none", "high"], "engine": "vllm",
               "repetitions": 2, "concurrency": 2, "max_tokens": 50, "extra_body": {"k": 1},
               "allow_unconfined": True},
    "agent": {"probe_max_tokens": 64, "tool_trials": 2, "tool_max_tokens": 64, "bfcl_per_category": 0,
              "bfcl_trials": 2, "bfcl_max_tokens": 64, "bfcl_data_dir": "/tmp/bfcl", "bfcl_version_label": "v",
              "agent_tasks": ["cart_root_cause"], "task_trials": 1, "max_turns": 5, "repeat_limit": 2,
              "task_max_tokens": 64, "context_length": 2048, "allow_unconfined": True},
}
SUITE_OF = {"speed": "speed", "mmlu_pro": "mmlu_pro", "packs": "packs", "effort": "effort", "agent": "agent_tools"}


def _recorded_value(section: str, key: str, cfg: RunConfig) -> Any:
    recorded = cfg.recorded()["suites"][section]
    return list(recorded[key]) if (section, key) == ("speed", "scenarios") else recorded[key]


# Settings that bound a run rather than shape it: not recorded in run.json, so not round-tripped here
# (speed.max_requests refuses an oversized plan up front: tests/unit/test_bounded_plans.py).
NOT_RECORDED = {"speed": {"max_requests"}}


def test_the_table_covers_every_suite_setting() -> None:
    for section, model in SuiteSettings.model_fields.items():
        if section == "load":  # rate mode's block round-trips in tests/unit/test_load.py (a plan's load: key)
            continue
        fields = set(model.annotation.model_fields) - NOT_RECORDED.get(section, set())  # type: ignore[union-attr]
        assert set(NON_DEFAULT[section]) == fields, section
        defaults = getattr(SuiteSettings(), section)
        for key, value in NON_DEFAULT[section].items():
            assert getattr(defaults, key) != value, f"{section}.{key}: the test value is the default"


@pytest.mark.parametrize("section", sorted(NON_DEFAULT))
def test_every_suite_setting_round_trips_from_a_plan_and_from_set(section: str, tmp_path: Path) -> None:
    values = NON_DEFAULT[section]
    body = {"name": "p", "suites": [SUITE_OF[section]], section: values,
            "rigs": [{"name": "r", "endpoint": {"base_url": "http://127.0.0.1:9/v1"}}]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(body))
    loaded = load_plan(tmp_path / "plan.yaml")
    from_plan = run_config_for(loaded.plan, loaded.rigs[0], tmp_path)
    sets = [f"{section}.{k}={json.dumps(v)}" for k, v in values.items()]
    flags = plan_from_options({"suite": SUITE_OF[section], "endpoint": "http://127.0.0.1:9/v1", "set_": sets})
    from_flags = run_config_for(flags.plan, flags.rig, tmp_path)
    for cfg in (from_plan, from_flags):
        for key, value in values.items():
            assert getattr(getattr(cfg.settings, section), key) == value, (section, key)
            assert _recorded_value(section, key, cfg) == value, (section, key)  # in the run header


@pytest.mark.parametrize(("body", "where"), [
    ("agent: {tool_trials: 0}", r"plan\.yaml:3: agent\.tool_trials: Input should be greater than or equal to 1"),
    ("agent: {tool_trial: 3}", r"plan\.yaml:3: agent\.tool_trial: unknown key"),
    ("mmlu_pro: {shots: many}", r"plan\.yaml:3: mmlu_pro\.shots: takes a whole number, not text; got .many."),
    ("speed: {concurrency: [2, 0]}", r"plan\.yaml:3: speed\.concurrency: concurrency levels must be positive"),
    ("speed: {profile: huge}", r"plan\.yaml:3: speed\.profile: unknown speed profile 'huge'"),
    ("sanity_max_tokens: 2", r"plan\.yaml:3: sanity_max_tokens: Input should be greater than or equal to 8"),
])
def test_a_bad_setting_in_a_plan_names_file_line_and_key(body: str, where: str, tmp_path: Path) -> None:
    p = tmp_path / "plan.yaml"
    p.write_text(f"name: p\nsuites: [speed]\n{body}\nrigs:\n  - {{name: r, endpoint: {{base_url: http://h/v1}}}}\n")
    with pytest.raises(PlanError, match=where):
        load_plan(p)


def test_set_is_refused_with_a_plan_whose_file_holds_the_settings(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: p\nrigs:\n  - {name: r, endpoint: {base_url: http://127.0.0.1:9/v1}}\n")
    res = invoke("run", str(plan), "--set", "agent.tool_trials=5", "--out", str(tmp_path / "out"))
    assert res.code == 2 and "write them in the plan file" in " ".join(res.stderr.split()), res.stderr
    assert not (tmp_path / "out").exists()  # refused before the plan directory is made


@pytest.mark.parametrize(("args", "message"), [
    (["--tool-trials", "0"], "--tool-trials: Input should be greater than or equal to 1; got 0."),
    (["--set", "agent.nope=1"], "--set agent.nope: no such setting"),
    (["--set", "agent.max_turns=lots"], "--set agent.max_turns: takes a whole number, not text; got 'lots'"),
    (["--set", "rig.port=1"], "--set rig.port: only suite settings are set this way"),
    (["--set", "agent"], "give SECTION.KEY=VALUE"),
    (["--repetitions", "0"], "Invalid value for '--repetitions'"),  # typer's own range check, as before
])
def test_a_bad_flag_names_the_flag(args: list[str], message: str, tmp_path: Path) -> None:
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--suite", "speed,agent_tools", *args,
                 "--out", str(tmp_path))
    assert res.code == 2 and res.traceback is None
    assert message in " ".join(res.stderr.split()), res.stderr


@pytest.mark.parametrize("run", ["emulator_a", "emulator_b", "run_v1"])
def test_runs_recorded_before_resume_under_the_same_flags(run: str, captured: list[RunConfig],
                                                          tmp_path: Path) -> None:
    """An old header loads, and the settings its own command line resolves to today match the ones it
    recorded: `--resume` of such a run is not refused as a changed configuration."""
    from rigbench.runner._resume import _refuse_changed_plan
    from rigbench.store import RunReader

    header = RunReader(GOLDEN / run).header
    argv = header.command[header.command.index("run") + 1:]
    if "--out" in argv:
        i = argv.index("--out")
        del argv[i:i + 2]
    res = invoke("run", *argv, "--out", str(tmp_path))
    assert len(captured) == 1, res.stderr + str(res.traceback)
    if run == "run_v1":
        # recorded with the quick profile before its long prompts were halved (2026-12-03, issue 31): the
        # same flags now mean other shapes, so --resume with them is refused, naming the shape that moved
        # (a plain `--resume DIR` reads the recorded shapes from run.json)
        with pytest.raises(UsageError, match=r"chat_long_context\.input_tokens from 1024 to 512"):
            _refuse_changed_plan(GOLDEN / run, header.plan, captured[0].recorded())
        return
    _refuse_changed_plan(GOLDEN / run, header.plan, captured[0].recorded())  # what --resume checks


def test_docs_plans_md_names_every_plan_key() -> None:
    from rigbench.plan import EmbeddedRig, Plan, PlanRig

    doc = (Path(__file__).resolve().parents[2] / "docs" / "plans.md").read_text()
    models = [Plan, PlanRig, EmbeddedRig, *(f.annotation for f in SuiteSettings.model_fields.values())]
    missing = [f"{m.__name__}.{k}" for m in models for k in m.model_fields  # type: ignore[union-attr]
               if f"`{k}`" not in doc]
    assert not missing, f"docs/plans.md does not document: {', '.join(missing)}"


def test_a_misspelt_agent_setting_names_the_keys_there_are(tmp_path: Path) -> None:
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--suite", "agent_tools",
                 "--set", "agent.tool_trial=2", "--out", str(tmp_path / "out"))
    msg = " ".join(res.stderr.split())
    assert res.code == 2 and res.traceback is None, res.stderr
    assert "--set agent.tool_trial: no such setting; the keys of agent are agent_tasks," in msg
    assert "tool_trials" in msg and "probe_max_tokens" in msg
    assert not (tmp_path / "out").exists()  # refused before anything ran


def test_a_misspelt_key_in_a_plan_names_file_line_and_the_keys_there_are(tmp_path: Path) -> None:
    p = tmp_path / "plan.yaml"
    p.write_text("name: p\nagent:\n  tool_trial: 2\nrigs:\n  - {name: r, endpoint: {base_url: http://h/v1}}\n")
    with pytest.raises(PlanError, match=r"plan\.yaml:3: agent\.tool_trial: unknown key \(misspelt\? the keys here "
                                        r"are agent_tasks, .*tool_max_tokens, tool_trials;"):
        load_plan(p)


def test_an_agent_setting_given_with_set_reaches_the_suite(tmp_path: Path) -> None:
    from rigbench.store import RunReader
    from rigbench.suites.agent import TOOL_CASES
    from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

    fast = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=16)
    with EmulatorProcess(fast) as emu:
        res = invoke("run", "--endpoint", emu.url, "--suite", "agent_tools", "--no-sanity", "--allow-untrusted",
                     "--set", "agent.tool_trials=2", "--out", str(tmp_path))
    assert res.code == 0 and res.traceback is None, res.stderr
    (run,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    trials = [r["unit_id"] for r in RunReader(run).raw_records("agent_tool_trial")]
    assert len(trials) == 2 * len(TOOL_CASES)  # the default is 3 trials per case
    assert {u.rsplit("/", 1)[1] for u in trials} == {"t0", "t1"}
