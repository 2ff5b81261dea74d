"""`rigbench run`'s options reach the plan typed (`plan.RunOptions`, `rig.RigFlags`), none forgotten.

Adversary: an option added to the command and not to the typed model would be dropped on its way to
the plan (the run measures the default, silently). Each parameter must be a field, or be named as an
output/exit option that is not a setting.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from rigbench.cli._run import run
from rigbench.errors import UsageError
from rigbench.plan import CLI_ONLY_OPTIONS, RunOptions, plan_from_options
from rigbench.rig import EmbeddedRig, EndpointSpec, RigFlags, VLLMLaunch

PARAMS = set(inspect.signature(run).parameters)
FIELDS = (set(RunOptions.model_fields) - {"rig"}) | set(RigFlags.model_fields)


def test_every_run_option_is_a_typed_field_or_not_a_setting() -> None:
    assert set() == PARAMS - FIELDS - CLI_ONLY_OPTIONS
    assert set() == FIELDS - PARAMS  # no field for an option the command does not have
    assert not (FIELDS & CLI_ONLY_OPTIONS)


def test_options_reach_the_plan_typed(tmp_path: Path) -> None:
    opts = RunOptions.of({"suite": "speed,agent", "concurrency": "1,4", "bfcl_data": tmp_path, "pack": None,
                          "set_": ["agent.repeat_limit=5"], "idle_timeout": 30.0, "draft_model": "embedded",
                          "draft_max": 3, "engine_arg": ("--no-mmap",), "out": tmp_path, "label": "x"})
    assert opts.bfcl_data == str(tmp_path) and opts.pack == [] and opts.rig.engine_arg == ["--no-mmap"]
    cp = plan_from_options(opts)
    assert cp.plan.suites == ["speed", "agent"] and cp.plan.speed.concurrency == [1, 4]
    assert cp.plan.agent.bfcl_data_dir == str(tmp_path) and cp.plan.agent.repeat_limit == 5
    assert cp.plan.deadlines.idle_s == 30.0
    assert isinstance(cp.rig.spec, EmbeddedRig) and cp.rig.spec.draft_max == 3
    assert cp.rig.spec.extra_args == ["--no-mmap"]


def test_the_engine_flag_picks_the_spec_and_a_bad_one_is_a_usage_error() -> None:
    assert isinstance(plan_from_options({"suite": "speed", "engine": "vllm"}).rig.spec, VLLMLaunch)
    attach = plan_from_options({"suite": "speed", "endpoint": "http://127.0.0.1:9/v1", "model": "m"}).rig.spec
    assert isinstance(attach, EndpointSpec) and attach.model == "m"
    with pytest.raises(UsageError, match="--engine 'sglang': rigbench launches llamacpp or vllm"):
        plan_from_options({"suite": "speed", "engine": "sglang"})
    with pytest.raises(UsageError, match=r"--draft-max: Input should be a valid integer.*; got 'deep'"):
        plan_from_options({"suite": "speed", "draft_max": "deep"})  # a hand-edited run.json, say
