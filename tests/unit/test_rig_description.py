"""The rig description run.json records (`plan.rig`) is what a resume compares: pinned, kind by kind.

`expected.json` was written by rigbench before the rig became one typed spec (issue 24); a change
here means runs started earlier would be refused on resume ("this command changes rig...").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigbench.plan import load_plan, plan_from_options, run_config_for

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "rig_description"
EXPECTED: dict[str, Any] = json.loads((HERE / "expected.json").read_text())
CLI: dict[str, dict[str, Any]] = json.loads((HERE / "cli.json").read_text())


def _plan_rigs() -> dict[str, Any]:
    lp = load_plan(HERE / "plan.yaml")
    return {r.name: (lp.plan, r) for r in lp.rigs}


PLAN_RIGS = _plan_rigs()


@pytest.mark.parametrize("name", sorted(PLAN_RIGS))
def test_a_plan_rigs_recorded_description_is_unchanged(name: str, tmp_path: Path) -> None:
    plan, rig = PLAN_RIGS[name]
    assert run_config_for(plan, rig, tmp_path, run_id="x").recorded()["rig"] == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(CLI))
def test_rigbench_run_flags_record_the_same_description(name: str, tmp_path: Path) -> None:
    cp = plan_from_options(dict(CLI[name]))
    assert run_config_for(cp.plan, cp.rig, tmp_path, run_id="x").recorded()["rig"] == EXPECTED["cli:" + name]


def test_every_pinned_description_is_checked() -> None:
    assert set(EXPECTED) == set(PLAN_RIGS) | {"cli:" + n for n in CLI}
