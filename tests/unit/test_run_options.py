"""`rigbench run`'s options reach the plan typed (`plan.RunOptions`, `rig.RigFlags`), none forgotten.

Adversary: an option added to the command and not to the typed model would be dropped on its way to
the plan (the run measures the default, silently). The command is made from the model's fields
(cli/_typed.py), so an option is declared once: each parameter is a field, and each field an option.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import pytest
import typer
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from rigbench.cli._run import run
from rigbench.cli._run_args import CLI_ONLY_OPTIONS
from rigbench.cli._typed import options_command, params_of
from rigbench.errors import UsageError
from rigbench.plan import RunOptions, plan_from_options
from rigbench.rig import EmbeddedRig, EndpointSpec, Flag, RigFlags
from rigbench.rig.engines._vllm import VLLMLaunch

PARAMS = set(inspect.signature(run).parameters)
FIELDS = (set(RunOptions.model_fields) - {"rig"}) | set(RigFlags.model_fields)


def test_every_run_option_is_a_typed_field_or_not_a_setting() -> None:
    assert FIELDS | CLI_ONLY_OPTIONS | {"ctx"} == PARAMS
    assert not (FIELDS & CLI_ONLY_OPTIONS)
    assert {"out", "resume", "markdown", "plan"} <= CLI_ONLY_OPTIONS  # output options stay out of the plan


class _Inner(BaseModel):
    port: Annotated[int | None, Flag("A port.")] = None


class _Opts(BaseModel):
    count: Annotated[int, Flag("How many.", min=1)] = 2
    tag: Annotated[list[str], Flag("Tags, repeatable.", "--tag")] = Field(default_factory=list)
    inner: _Inner = Field(default_factory=_Inner)


def _cli(got: list[_Opts]) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @options_command(_Opts)
    def cmd(ctx: typer.Context | None, o: _Opts) -> None:
        got.append(o)

    return app


def test_a_field_is_an_option_and_the_body_gets_the_model() -> None:
    got: list[_Opts] = []
    res = CliRunner().invoke(_cli(got), ["--count", "3", "--tag", "a", "--tag", "b", "--port", "9"])
    assert res.exit_code == 0, res.output
    assert got == [_Opts(count=3, tag=["a", "b"], inner=_Inner(port=9))]  # the nested model is flat on the line
    assert params_of(got[0]) == {"count": 3, "tag": ["a", "b"], "port": 9}
    res = CliRunner().invoke(_cli(got), [])
    assert res.exit_code == 0 and got[-1] == _Opts()  # not given: the model's defaults
    res = CliRunner().invoke(_cli(got), ["--count", "0"])  # the Flag's extras reach the option (min=1)
    assert res.exit_code == 2 and len(got) == 2


def test_a_field_without_its_help_is_refused_when_the_command_is_made() -> None:
    class Bare(BaseModel):
        n: int = 1

    with pytest.raises(TypeError, match=r"Bare\.n has no Flag"):
        options_command(Bare)(lambda ctx, o: None)


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
    with pytest.raises(UsageError, match=r"--engine 'sglang': `rigbench run` does not launch sglang\. Start the server"):
        plan_from_options({"suite": "speed", "engine": "sglang"})
    with pytest.raises(UsageError, match="unknown engine 'sglng': rigbench knows llamacpp, ollama, sglang, vllm"):
        plan_from_options({"suite": "speed", "engine": "sglng"})
    with pytest.raises(UsageError, match="--endpoint attaches to a running server; --kv-cache-gib only apply"):
        plan_from_options({"suite": "speed", "endpoint": "http://127.0.0.1:9/v1", "kv_cache_gib": 2.0})
    with pytest.raises(UsageError, match=r"--draft-max: Input should be a valid integer.*; got 'deep'"):
        plan_from_options({"suite": "speed", "draft_max": "deep"})  # a hand-edited run.json, say


def test_packs_are_a_comma_list_like_every_other_list() -> None:
    one = RunOptions.of({"suite": "packs", "pack": ["multilingual,extra.yaml"]})
    repeated = RunOptions.of({"suite": "packs", "pack": ["multilingual", "extra.yaml"]})
    assert one.pack == repeated.pack == ["multilingual", "extra.yaml"]
    assert plan_from_options(one).plan.packs.packs == ["multilingual", "extra.yaml"]
