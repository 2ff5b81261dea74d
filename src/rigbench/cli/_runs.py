"""The runs a report reads: run directories, a plan directory standing for its rigs' runs, and each run
against the first. `rigbench report` and the plan report (cli/_plan.py) both read runs this way; neither
imports the other for it."""

from __future__ import annotations

from pathlib import Path

from rigbench.analysis import Comparison, Revision, RunAnalysis, compare_runs, find_revisions
from rigbench.plan import is_plan_dir, plan_runs
from rigbench.store import RunReader

__all__ = ["across_runs", "named_runs"]


def named_runs(paths: list[Path]) -> list[tuple[str, Path]]:
    """Run directories to report, a plan directory standing for its rigs' runs (named by rig)."""
    out: list[tuple[str, Path]] = []
    for p in paths:
        if is_plan_dir(p):
            out += [(e.name, r.dir) for e, r in plan_runs(p) if r is not None]
        else:
            out.append((p.name, p))
    return out


def across_runs(names: list[str], paths: list[Path],
                analyses: list[RunAnalysis]) -> tuple[list[Comparison], list[Revision]]:
    """Each run against the first (speed-up), and re-measurements among them."""
    comparisons: list[Comparison] = []
    if len(paths) > 1 and all(a.speed for a in analyses):
        comparisons = compare_runs(RunReader(paths[0]), [RunReader(p) for p in paths[1:]], allow_mismatch=True)
    return comparisons, find_revisions(names, analyses)
