"""The suite registry (suites/_registry.py): each suite's spec is the one place its names, settings and
`rigbench run` options are listed, and a plan directory started before the registry still resumes.

Adversary: an option that reaches no setting (a flag the run silently ignores), a flag table naming a
setting the suite does not have, and a plan whose hash or recorded settings moved (its directory would
refuse to resume, or resume measuring differently).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigbench.errors import UsageError
from rigbench.plan import RunOptions, load_plan, plan_from_options, run_config_for
from rigbench.suites import SUITE_NAMES, SUITES, SuiteSettings, build_suites, suite_spec

STORED = Path(__file__).parent.parent / "fixtures" / "stored_plan"

# `rigbench run`'s options that are the run's or the rig's, not a suite's setting.
RUN_LEVEL = {"rig", "api_key_env", "suite", "seed", "allow_busy_host", "allow_long_run", "allow_unconfined",
             "no_sanity", "sanity_max_tokens", "sanity_seed", "bandwidth_gbs", "idle_timeout", "request_timeout",
             "retry_on", "max_retries", "max_retry_wait", "set_"}


def test_a_plan_directory_started_before_the_registry_resumes_with_the_same_settings(tmp_path: Path) -> None:
    """plan.yaml sets every suite's section; recorded.json is what rigbench wrote for it before the registry
    (commit 871e342): the plan's hash (a plan directory's index holds it) and each rig's recorded suite
    settings (each run's run.json holds them; a resume must match them)."""
    stored = json.loads((STORED / "recorded.json").read_text())
    loaded = load_plan(STORED / "plan.yaml")
    assert loaded.config_sha256 == stored["config_sha256"] == "8edcd11ededdcdd0"
    assert loaded.resumes(stored["config_sha256"])
    assert [r.name for r in loaded.rigs] == ["ep", "depth-off", "depth-4"] and set(stored["rigs"]) == {"ep", "depth-off", "depth-4"}
    for rig in loaded.rigs:
        cfg = run_config_for(loaded.plan, rig, tmp_path, run_id="x")
        assert cfg.suite_settings == stored["rigs"][rig.name]["suites"], rig.name
        assert [type(s).__name__ for s in cfg.suites] == stored["rigs"][rig.name]["suite_classes"], rig.name


def test_every_suite_option_sets_a_setting_its_suite_has() -> None:
    options = set(RunOptions.model_fields)
    flagged = {f.option for spec in SUITES for f in spec.flags}
    for spec in SUITES:
        for f in spec.flags:
            assert f.option in options, f"{spec.key}: {f.flag} is no `rigbench run` option"
            assert f.setting in spec.settings.model_fields, f"{spec.key}: {f.flag} sets no setting ({f.setting})"
    ignored = options - flagged - RUN_LEVEL
    assert not ignored, f"options that reach no suite's setting (add them to its spec's flags): {sorted(ignored)}"


def test_the_load_flags_reach_the_load_settings_and_a_plan_refuses_each_by_its_flag(tmp_path: Path) -> None:
    given = {"rate": "1,2", "arrival": "gamma", "burstiness": 0.5, "duration": 5.0, "max_concurrency": 3,
             "slo": "ttft=500ms", "slo_attainment": 0.9, "input_tokens": "64", "output_tokens": "32"}
    load = plan_from_options({"suite": "speed", **given}).plan.load
    assert (load.rate_rps, load.arrival, load.burstiness, load.duration_s, load.max_concurrency) == \
        ([1.0, 2.0], "gamma", 0.5, 5.0, 3)
    assert load.slo_attainment == 0.9 and load.slo is not None and load.input_tokens.mean == 64
    with pytest.raises(UsageError, match="--rate"):  # a typo is said with the flag the user typed
        plan_from_options({"suite": "speed", "rate": "fast"})

    from rigbench.cli._checks import check_load_options
    from rigbench.cli._run_args import RunArgs

    for f in suite_spec("load").flags:
        value = True if f.option == "sweep" else "x"
        args = RunArgs.model_construct(**{**RunArgs().model_dump(), "plan": tmp_path / "p.yaml", f.option: value})
        with pytest.raises(UsageError, match=f"^{f.flag} sets a single run's load"):
            check_load_options(args)


def test_every_name_builds_its_suite_and_records_under_its_key() -> None:
    settings = SuiteSettings.model_validate({"load": {"rate_rps": 1}})
    for spec in SUITES:
        for name in spec.all_names:
            built = build_suites([name], settings)
            assert list(built.recorded) == [spec.key] and len(built.suites) == 1, name
    parts = build_suites(["agent_tools", "speed", "agent_probes"], settings)  # one agent suite, where first named
    assert [s.name for s in parts.suites] == ["agent", "speed"]
    assert parts.recorded["agent"]["parts"] == ["tools", "probes"]
    with pytest.raises(UsageError, match=f"unknown suite 'sped'; available: {', '.join(SUITE_NAMES)}"):
        build_suites(["sped"])


def test_the_set_sections_and_the_plans_suite_sections_are_the_registry(tmp_path: Path) -> None:
    for spec in SUITES:  # `--set KEY.x` takes every suite's section, the plan model has it
        with pytest.raises(UsageError, match=f"--set {spec.key}.no_such_key: no such setting"):
            plan_from_options({"suite": "speed", "set_": [f"{spec.key}.no_such_key=1"]})
    with pytest.raises(UsageError, match="only suite settings are set this way"):
        plan_from_options({"suite": "speed", "set_": ["seed.x=1"]})


def test_a_suite_is_registered_by_its_settings_field_and_a_mismatch_stops_the_import() -> None:
    """Every suite package's `_spec.py` is found by looking, and SuiteSettings' field is the one registration:
    a spec written without its field (or a field without a spec, or typed by other settings) is refused when
    rigbench is imported, never a suite silently missing from the CLI, --set or plans."""
    from rigbench.suites import _registry
    from rigbench.suites.speed._settings import SpeedSettings

    written = _registry._written()
    assert sorted(s.key for s in written) == sorted(SuiteSettings.model_fields)  # each package found, once
    assert tuple(s.key for s in SUITES) == tuple(SuiteSettings.model_fields)  # in the fields' order
    speed = next(s for s in written if s.key == "speed")
    extra = type(speed)(key="tokens", settings=SpeedSettings, names=("tokens",), flags=(), build=speed.build)
    with pytest.raises(TypeError, match=r"specs without a field \['tokens'\]"):
        _registry._registered([*written, extra])
    with pytest.raises(TypeError, match=r"fields without a spec \['speed'\]"):
        _registry._registered([s for s in written if s.key != "speed"])
    load = next(s for s in written if s.key == "load")
    with pytest.raises(TypeError, match=r"mistyped \['load'\]"):
        _registry._registered([*(s for s in written if s.key != "load"), type(load)(
            key="load", settings=SpeedSettings, names=load.names, flags=(), build=load.build)])
    with pytest.raises(TypeError, match="specs"):
        _registry._registered([*written, speed])  # one suite's spec twice
