"""A plan whose known duration passes a day is refused before anything starts (`--allow-long-run`).

Adversary: a typo such as `--duration 86400000` or `--rate 0.0001`, found hours into a run. What is
known up front is the load suite's arrival schedule (a rate's duration, a sweep's rates x duration,
requests or sessions at a rate, a trace's span), per rig; the speed suite's time depends on the
server's speed and is projected from its first measured batch instead (suites/speed/_suite.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.errors import UsageError
from rigbench.plan._models import Plan
from rigbench.suites.speed import MAX_RUN_S

__all__ = ["check_plan_length"]


def check_plan_length(plan: Plan, rig_suites: Sequence[list[str]], *, fix: str) -> None:
    """Refuse a plan whose known schedule, summed over the rigs that run the load suite, passes a day;
    `fix` says how this caller lifts the bound (the flag, or the plan key)."""
    if plan.allow_long_run:
        return
    known = plan.load.schedule_s() if any("load" in s for s in rig_suites) else None
    if known is None:
        return
    seconds, how = known
    rigs = sum(1 for s in rig_suites if "load" in s)
    total = seconds * rigs
    if total <= MAX_RUN_S:
        return
    per = f" x {rigs} rigs" if rigs > 1 else ""
    raise UsageError(f"this plan offers load for about {total:,.0f} s ({total / 3600:,.1f} h: {how}{per}), more "
                     f"than a day ({MAX_RUN_S:,.0f} s). Shorten it, or {fix} if you mean it.")
