"""The plan directory's index, `plan.json`: which run directory holds each rig, and how it ended.

A plan directory holds `plan.json`, a copy of the plan file (`plan.yaml`) and one run directory
per rig. The index is rewritten atomically after every change, so a killed plan leaves a
readable index that `rigbench run PLAN --resume PLAN_DIR` continues from.

Format history: 1: first version.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from rigbench.errors import StoreError
from rigbench.records import Frozen

__all__ = ["PLAN_FILE", "PLAN_INDEX_FILE", "PLAN_INDEX_VERSION", "PlanIndex", "PlanRigEntry",
           "is_plan_dir", "read_plan_index", "write_plan_index"]

PLAN_INDEX_VERSION = 1
PLAN_INDEX_FILE = "plan.json"
PLAN_FILE = "plan.yaml"

RigStatus = Literal["pending", "running", "complete", "failed", "interrupted"]


class PlanRigEntry(Frozen):
    name: str
    kind: str  # embedded | vllm | sglang | llamacpp | ollama | command | container | endpoint
    run_dir: str | None = None  # relative to the plan directory; None until the rig's run starts
    status: RigStatus = "pending"
    error: str | None = None
    source_data_id: str | None = None
    trusted: bool | None = None


class PlanIndex(Frozen):
    format_version: int = PLAN_INDEX_VERSION
    name: str
    plan_file: str  # the path it was started from (informational; the copy is plan.yaml)
    config_sha256: str  # resolved configuration: a resume must match it
    created_at: str
    finished_at: str | None = None
    rigs: list[PlanRigEntry] = Field(default_factory=list)

    def entry(self, name: str) -> PlanRigEntry:
        return next(r for r in self.rigs if r.name == name)

    def with_entry(self, entry: PlanRigEntry) -> PlanIndex:
        return self.model_copy(update={"rigs": [entry if r.name == entry.name else r for r in self.rigs]})


def is_plan_dir(path: Path) -> bool:
    return (path / PLAN_INDEX_FILE).is_file()


def read_plan_index(plan_dir: Path) -> PlanIndex:
    p = plan_dir / PLAN_INDEX_FILE
    if not p.is_file():
        raise StoreError(f"{plan_dir} is not a plan directory: no {PLAN_INDEX_FILE}. Pass a directory made "
                         "by `rigbench run PLAN.yaml` (see `rigbench ls`).")
    try:
        raw = json.loads(p.read_text())
    except ValueError as e:
        raise StoreError(f"{p} is not valid JSON ({e}); the plan index is damaged.") from e
    if raw.get("format_version") != PLAN_INDEX_VERSION:
        raise StoreError(f"{p} has plan index version {raw.get('format_version')!r}; this rigbench reads "
                         f"{PLAN_INDEX_VERSION}. Upgrade rigbench.")
    try:
        return PlanIndex.model_validate(raw)
    except ValidationError as e:
        raise StoreError(f"{p} does not match the plan index format: {e}") from e


def write_plan_index(plan_dir: Path, index: PlanIndex) -> None:
    tmp = plan_dir / (PLAN_INDEX_FILE + ".tmp")
    tmp.write_text(index.model_dump_json(indent=2))
    os.replace(tmp, plan_dir / PLAN_INDEX_FILE)
