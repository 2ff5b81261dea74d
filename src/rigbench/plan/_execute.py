"""Running a plan: each rig in turn (launch, measure, stop), one run directory each, one index.

A rig that fails (its engine will not start, it crashes mid-run) is recorded as failed in the
index with rigbench's error message, and the plan goes on to the next rig; the caller reports
it and exits non-zero. Ctrl-C marks the current rig interrupted and stops the plan; so does a busy host
(`BusyHostError`: the rigs after it would be measured on the same busy host).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rigbench.client import redact_text
from rigbench.errors import BusyHostError, RigbenchError, UsageError
from rigbench.plan._config import run_config_for
from rigbench.plan._index import (
    PLAN_FILE,
    PlanIndex,
    PlanRigEntry,
    read_plan_index,
    write_plan_index,
)
from rigbench.plan._length import check_plan_length
from rigbench.plan._load import LoadedPlan, PlanError, ResolvedRig
from rigbench.runner import check_concurrency, execute_run
from rigbench.store import RunReader, new_run_id, now_utc
from rigbench.suites import NullProgress, Progress, build_suites

__all__ = ["check_plan", "execute_plan", "open_index"]


def check_plan(loaded: LoadedPlan) -> None:
    """Every rig's suites and scenarios, and the concurrency, before the first rig runs.

    Adversary: a plan whose third rig names a suite that does not exist, found only after the
    first two rigs spent an hour measuring.
    """

    settings = loaded.plan.suite_settings()
    for rig in loaded.rigs:
        try:
            build_suites(rig.suites, settings)
        except UsageError as e:
            raise PlanError(f"plan {loaded.path}, rig {rig.name!r}: {e}") from None
    check_concurrency(loaded.plan.speed.concurrency)
    check_plan_length(loaded.plan, [rig.suites for rig in loaded.rigs],
                      fix=f"set `allow_long_run: true` in {loaded.path}")


def _kind(rig: ResolvedRig) -> str:
    return str(rig.key()["kind"])


def open_index(loaded: LoadedPlan, plan_dir: Path, resume: bool) -> PlanIndex:
    if resume:
        index = read_plan_index(plan_dir)
        if not loaded.resumes(index.config_sha256) and loaded.path.resolve() == (plan_dir / PLAN_FILE).resolve():
            # its own copy resolves differently: the directory was written by another rigbench version
            raise PlanError(
                f"cannot resume {plan_dir}: it was written by a rigbench whose resolved configuration of "
                f"this plan differs (was {index.config_sha256}, now {loaded.config_sha256}), so new runs "
                f"would not be comparable with its completed ones. Its runs stay readable (`rigbench report "
                f"{plan_dir}`); start a new plan directory to measure again.")
        if not loaded.resumes(index.config_sha256):
            raise PlanError(
                f"cannot resume {plan_dir} with {loaded.path}: the plan's resolved configuration changed "
                f"(was {index.config_sha256}, now {loaded.config_sha256}). Resume with the plan it started "
                f"from ({plan_dir / PLAN_FILE}), or start a new plan directory.")
        return index
    if plan_dir.exists() and any(plan_dir.iterdir()):
        raise UsageError(f"plan directory {plan_dir} already exists and is not empty; choose another --out, "
                         f"or continue it with `rigbench run {loaded.path} --resume {plan_dir}`.")
    plan_dir.mkdir(parents=True, exist_ok=True)

    (plan_dir / PLAN_FILE).write_text(redact_text(loaded.text))  # URL credentials are never stored
    index = PlanIndex(name=loaded.plan.name, plan_file=str(loaded.path), config_sha256=loaded.config_sha256,
                      created_at=now_utc(), rigs=[PlanRigEntry(name=r.name, kind=_kind(r)) for r in loaded.rigs])
    write_plan_index(plan_dir, index)
    return index


async def execute_plan(
    loaded: LoadedPlan,
    plan_dir: Path,
    *,
    resume: bool = False,
    progress: Progress | None = None,
    build_progress: Any = None,
    on_rig: Callable[[str, int, int], None] = lambda name, i, n: None,
) -> PlanIndex:
    """Measure every rig not yet complete; returns the final index (also in plan_dir/plan.json)."""

    prog = progress or NullProgress()
    check_plan(loaded)
    index = open_index(loaded, plan_dir, resume)
    for i, rig in enumerate(loaded.rigs):
        entry = index.entry(rig.name)
        if entry.status == "complete":
            prog.note(f"{rig.name}: already complete ({entry.run_dir}), skipped")
            continue
        on_rig(rig.name, i, len(loaded.rigs))
        prior = plan_dir / entry.run_dir if entry.run_dir and (plan_dir / entry.run_dir / "run.json").exists() else None
        run_id = prior.name if prior is not None else new_run_id(rig.name)
        entry = entry.model_copy(update={"run_dir": run_id, "status": "running", "error": None})
        index = index.with_entry(entry)
        write_plan_index(plan_dir, index)
        try:
            cfg = run_config_for(loaded.plan, rig, plan_dir, run_id=run_id, resume=prior)
            header = await execute_run(cfg, prog, build_progress=build_progress)
            entry = entry.model_copy(update={
                "status": header.status, "error": header.error, "source_data_id": header.source_data_id,
                "trusted": header.trust.trusted if header.trust else None})
        except (KeyboardInterrupt, asyncio.CancelledError):
            index = index.with_entry(entry.model_copy(update={"status": "interrupted",
                                                              "error": "interrupted by the user"}))
            write_plan_index(plan_dir, index)
            raise
        except BusyHostError as e:
            # the host is busy: the next rigs would be measured on it too. This rig is resumable, its units kept
            index = index.with_entry(entry.model_copy(update={"status": "interrupted", "error": str(e)}))
            write_plan_index(plan_dir, index)
            raise
        except RigbenchError as e:
            entry = entry.model_copy(update={"status": "failed", "error": str(e)})
            if not (plan_dir / run_id / "run.json").exists():
                entry = entry.model_copy(update={"run_dir": None})  # failed before its run began
            prog.note(f"{rig.name}: FAILED: {str(e).splitlines()[0]}")
        except BaseException as e:
            index = index.with_entry(entry.model_copy(update={"status": "failed",
                                                              "error": f"{type(e).__name__}: {e}"}))
            write_plan_index(plan_dir, index)
            raise
        index = index.with_entry(entry)
        write_plan_index(plan_dir, index)
    index = index.model_copy(update={"finished_at": now_utc()})
    write_plan_index(plan_dir, index)
    return index


def plan_runs(plan_dir: Path) -> list[tuple[PlanRigEntry, RunReader | None]]:
    """Each rig of a plan directory with its run (None when it never started)."""
    index = read_plan_index(plan_dir)
    out: list[tuple[PlanRigEntry, RunReader | None]] = []
    for e in index.rigs:
        reader = RunReader(plan_dir / e.run_dir) if e.run_dir and (plan_dir / e.run_dir / "run.json").exists() \
            else None
        out.append((e, reader))
    return out
