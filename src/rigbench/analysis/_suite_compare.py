"""Quality and agent results of two runs side by side, each difference with its test: what
`rigbench compare` and `rigbench report A B` print next to the speed comparison.

MMLU-Pro per subject and overall (`compare_mmlu_pro`), task packs overall and per task, agent
tool-call and BFCL accuracy: exact McNemar when both runs answered the same items (unit ids),
else Fisher's exact test (`pair_test`), each with its
three-way verdict: same within ±M points, differs, or inconclusive. Probe verdicts are categorical: listed side by side, changes
marked; multi-turn tasks: pass^k side by side (k trials are too few for a test).
"""

from __future__ import annotations

from pydantic import Field

from rigbench.analysis._agent import summarize_agent
from rigbench.analysis._proportion import Proportion, proportion
from rigbench.analysis._quality_compare import MMLUProComparison, PairTest, compare_mmlu_pro, pair_test
from rigbench.analysis._verdict import DEFAULT_MARGIN
from rigbench.records import BFCLItemRecord, Frozen, MMLUProAnswer, PackAnswer, ToolTrialRecord
from rigbench.store import RunReader

__all__ = ["AccuracyDiff", "ProbeDiff", "SuiteComparison", "TaskDiff", "compare_suites"]


class AccuracyDiff(Frozen):
    """One graded set (a pack, a pack's task, tool calls, BFCL) in both runs, with its test."""

    name: str
    baseline: Proportion
    other: Proportion
    test: PairTest  # run_a = other, run_b = baseline: diff = other − baseline


class ProbeDiff(Frozen):
    probe: str
    baseline: str | None  # verdict, None when the probe did not run there
    other: str | None

    @property
    def changed(self) -> bool:
        return self.baseline != self.other


class TaskDiff(Frozen):
    task: str
    baseline: str  # "passed/trials, pass^k"
    other: str


class SuiteComparison(Frozen):
    baseline_run: str
    other_run: str
    mmlu_pro: MMLUProComparison | None = None
    packs: list[AccuracyDiff] = Field(default_factory=list)  # each pack overall, then its tasks as "pack/task"
    agent: list[AccuracyDiff] = Field(default_factory=list)  # tool calls, BFCL
    probes: list[ProbeDiff] = Field(default_factory=list)
    tasks: list[TaskDiff] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.mmlu_pro or self.packs or self.agent or self.probes or self.tasks)


def _diff(name: str, base_id: str, base: dict[str, bool], other_id: str, other: dict[str, bool],
          margin: float) -> AccuracyDiff:
    return AccuracyDiff(name=name, baseline=proportion(sum(base.values()), len(base)),
                        other=proportion(sum(other.values()), len(other)),
                        test=pair_test(name, other_id, other, base_id, base, margin=margin))


def _graded(rows: dict[str, PackAnswer], pack: str, task: str | None = None) -> dict[str, bool]:
    return {u: a.correct for u, a in rows.items() if a.pack == pack and (task is None or a.task_id == task)}


def _packs(base_id: str, base: list[PackAnswer], other_id: str, other: list[PackAnswer],
           margin: float) -> list[AccuracyDiff]:
    out = []
    b = {a.unit_id: a for a in base if a.suite == "packs"}
    o = {a.unit_id: a for a in other if a.suite == "packs"}
    for pack in sorted({a.pack for a in b.values()} & {a.pack for a in o.values()}):
        out.append(_diff(pack, base_id, _graded(b, pack), other_id, _graded(o, pack), margin))
        tasks = dict.fromkeys(a.task_id for a in b.values() if a.pack == pack)
        out += [_diff(f"{pack}/{t}", base_id, _graded(b, pack, t), other_id, _graded(o, pack, t), margin) for t in tasks
                if _graded(o, pack, t)]
    return out


def _agent(base: RunReader, other: RunReader, margin: float) -> list[AccuracyDiff]:
    bid, oid = base.header.run_id, other.header.run_id
    out = []
    tb = {r.unit_id: r.passed for r in base.records("agent_tool_trial", ToolTrialRecord)}
    to = {r.unit_id: r.passed for r in other.records("agent_tool_trial", ToolTrialRecord)}
    if tb and to:
        out.append(_diff("tool-call cases", bid, tb, oid, to, margin))
    bb = {r.unit_id: r.valid for r in base.records("agent_bfcl_item", BFCLItemRecord)}
    bo = {r.unit_id: r.valid for r in other.records("agent_bfcl_item", BFCLItemRecord)}
    if bb and bo:
        out.append(_diff("BFCL", bid, bb, oid, bo, margin))
    return out


def compare_suites(base: RunReader, other: RunReader, *, margin: float = DEFAULT_MARGIN) -> SuiteComparison:
    """Every quality and agent result the two runs share, the other run against the baseline:
    "same within ±margin points", "differs", or "inconclusive" (`analysis/_verdict.py`)."""
    bid, oid = base.header.run_id, other.header.run_id
    mb = base.records("mmlu_pro_answer", MMLUProAnswer)
    mo = other.records("mmlu_pro_answer", MMLUProAnswer)
    mmlu = compare_mmlu_pro([(bid, mb), (oid, mo)], margin=margin) if mb and mo else None
    sa, so = summarize_agent(base), summarize_agent(other)
    vb = {p.probe: str(p.verdict) for p in sa.probes}
    vo = {p.probe: str(p.verdict) for p in so.probes}
    probes = [ProbeDiff(probe=p, baseline=vb.get(p), other=vo.get(p)) for p in dict.fromkeys([*vb, *vo])] \
        if vb and vo else []
    tb = {t.task: t for t in sa.tasks}
    tasks = [TaskDiff(task=t.task, baseline=f"{tb[t.task].passed}/{tb[t.task].trials}, pass^{tb[t.task].k} "
                      f"{tb[t.task].pass_hat_k:.2f}", other=f"{t.passed}/{t.trials}, pass^{t.k} {t.pass_hat_k:.2f}")
             for t in so.tasks if t.task in tb]
    return SuiteComparison(
        baseline_run=bid, other_run=oid, mmlu_pro=mmlu,
        packs=_packs(bid, base.records("pack_answer", PackAnswer), oid, other.records("pack_answer", PackAnswer), margin),
        agent=_agent(base, other, margin), probes=probes, tasks=tasks,
    )
