"""Per-request deadlines: one `Deadlines` object from the plan (or flags) to the client's timers.

The same names all the way down (`idle_s`, `total_s`, `connect_s`, `read_s`), defaults in one place,
and the recorded form and plan hash unchanged so runs and plan directories started before still resume.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from rigbench.client import Deadlines
from rigbench.plan import PlanError, load_plan, run_config_for
from rigbench.runner import execute_run
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault


def _plan(tmp_path: Path, deadlines: str, url: str = "http://127.0.0.1:9/v1") -> Path:
    p = tmp_path / "plan.yaml"
    p.write_text(textwrap.dedent(f"""\
        name: d
        sanity: false
        speed: {{scenarios: [chat_short], repetitions: 2, warmup: 0}}
        {deadlines}
        rigs:
          - {{name: one, endpoint: {{base_url: "{url}"}}}}
        """))
    return p


# Hashes and recorded forms computed by rigbench before `Deadlines` existed (commit a704f62): a plan
# directory or run started then must still resume, so these may never change.
@pytest.mark.parametrize(("deadlines", "sha", "recorded"), [
    ("", "ee15e49c2e0a67b5", {"idle_s": 600.0, "total_s": 3600.0}),
    ("deadlines: null", "ee15e49c2e0a67b5", {"idle_s": 600.0, "total_s": 3600.0}),
    ("deadlines: {idle_s: 30}", "d4ecd0da816abc2d", {"idle_s": 30.0, "total_s": 3600.0}),
    ("deadlines: {idle_s: 30, total_s: 120}", "0833716b273b8704", {"idle_s": 30.0, "total_s": 120.0}),
    ("deadlines: {total_s: 3600}", "307ef0f36344d925", {"idle_s": 600.0, "total_s": 3600.0}),
])
def test_plan_hash_and_recorded_deadlines_are_the_ones_older_runs_hold(
        tmp_path: Path, deadlines: str, sha: str, recorded: dict[str, float]) -> None:
    lp = load_plan(_plan(tmp_path, deadlines))
    cfg = run_config_for(lp.plan, lp.rigs[0], tmp_path, run_id="x")
    assert cfg.recorded()["deadlines"] == recorded
    assert lp.config_sha256 == sha


def test_defaults_live_on_the_deadlines_object_and_bad_values_name_the_key(tmp_path: Path) -> None:
    assert Deadlines() == Deadlines(idle_s=600, total_s=3600, connect_s=10, read_s=600)
    assert load_plan(_plan(tmp_path, "")).plan.deadlines == Deadlines()
    for bad in ("read_s: 0", "connect_s: .nan", "idle_s: -1"):
        with pytest.raises(PlanError, match=rf"plan.yaml:4: deadlines.{bad.split(':')[0]}"):
            load_plan(_plan(tmp_path, f"deadlines: {{{bad}}}"))


# A stall with no byte at all (no keep-alive comments): only the read deadline can end it.
_STALL = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=16,
                        faults=[Fault(kind="stall", at_token=2, stall_ms=60_000, every=2)])


def test_a_plans_read_deadline_reaches_the_client_and_is_recorded(tmp_path: Path) -> None:
    with EmulatorProcess(_STALL) as emu:
        lp = load_plan(_plan(tmp_path, "deadlines: {read_s: 0.4}", emu.url))
        cfg = run_config_for(lp.plan, lp.rigs[0], tmp_path / "runs", run_id="r", allow_untrusted=True)
        header = asyncio.run(execute_run(cfg))
    reader = RunReader(tmp_path / "runs" / header.run_id)
    errors = [r["result"]["error"] for r in reader.raw_records("speed_request")]
    assert sorted(e["kind"] if e else "ok" for e in errors) == ["ok", "timeout"], errors
    assert "no data for 0.4 s" in next(e["message"] for e in errors if e)
    assert reader.header.plan["deadlines"] == {"idle_s": 600.0, "total_s": 3600.0, "read_s": 0.4}


def test_control_a_healthy_server_passes_the_same_deadlines(tmp_path: Path) -> None:
    with EmulatorProcess(_STALL.model_copy(update={"faults": []})) as emu:
        lp = load_plan(_plan(tmp_path, "deadlines: {read_s: 0.4}", emu.url))
        cfg = run_config_for(lp.plan, lp.rigs[0], tmp_path / "runs", run_id="r", allow_untrusted=True)
        header = asyncio.run(execute_run(cfg))
    errors = [r["result"]["error"] for r in RunReader(tmp_path / "runs" / header.run_id).raw_records("speed_request")]
    assert errors == [None, None]
