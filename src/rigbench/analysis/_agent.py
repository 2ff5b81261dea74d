"""Agent readiness, derived from the agent suites' records: probe verdicts, tool-call accuracy
with its standard error, calls-per-message distributions, BFCL accuracy, and pass^k of the
multi-turn tasks with the turns, calls, tokens and time they took."""

from __future__ import annotations

from collections import Counter
from math import comb, nan
from typing import TypeVar

from pydantic import Field

from rigbench.analysis._proportion import Proportion, proportion
from rigbench.analysis._stats import Stat, describe
from rigbench.records import (
    BFCLItemRecord,
    Frozen,
    ProbeRecord,
    ProbeVerdict,
    TaskTrialRecord,
    ToolTrialRecord,
)
from rigbench.store import RunReader

__all__ = [
    "AgentSummary",
    "BFCLCategoryScore",
    "ProbeRow",
    "TaskScore",
    "ToolCaseScore",
    "pass_hat_k",
    "summarize_agent",
    "summarize_agent_records",
]

R = TypeVar("R", ProbeRecord, ToolTrialRecord, BFCLItemRecord, TaskTrialRecord)


class ProbeRow(Frozen):
    probe: str
    verdict: ProbeVerdict
    detail: str


class ToolCaseScore(Frozen):
    case: str
    accuracy: Proportion
    calls_per_message: dict[int, int]  # calls in one assistant message -> how many messages had that many
    messages_per_trial: dict[int, int]  # assistant messages in one trial -> how many trials
    failure_reasons: dict[str, int]


class BFCLCategoryScore(Frozen):
    category: str
    accuracy: Proportion
    error_types: dict[str, int]


class TaskScore(Frozen):
    task: str
    task_kind: str
    trials: int
    passed: int
    pass_at_1: float  # mean success over trials
    k: int  # = trials
    pass_hat_k: float  # all k trials succeed (tau-bench's pass^k estimator at k = n)
    turns: Stat | None
    tool_calls: Stat | None
    calls_per_turn: dict[int, int]
    completion_tokens: Stat | None  # per trial, summed over turns (None when the server sent no usage)
    wall_s: Stat | None
    stop_reasons: dict[str, int]
    refused_paths: int
    network: str | None  # how the tests were isolated from the network (repo_fix)
    # repo_fix: why the trials that did not pass did not, trials per reason ("tests skipped": 2); from
    # the grade's per-test outcomes (records before they were kept: empty)
    not_passed_why: dict[str, int] = Field(default_factory=dict)


class AgentSummary(Frozen):
    probes: list[ProbeRow] = Field(default_factory=list)
    verdict_counts: dict[str, int] = Field(default_factory=dict)
    silently_ignored: list[str] = Field(default_factory=list)  # the dangerous probes
    tool_cases: list[ToolCaseScore] = Field(default_factory=list)
    tool_accuracy: Proportion | None = None  # over all tool-call trials
    bfcl: list[BFCLCategoryScore] = Field(default_factory=list)
    bfcl_accuracy: Proportion | None = None
    bfcl_version: str | None = None
    tasks: list[TaskScore] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.probes or self.tool_cases or self.bfcl or self.tasks)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that k trials drawn from n, of which c passed, all pass: C(c,k)/C(n,k) (tau-bench)."""
    if k <= 0 or n < k:
        return nan
    return comb(c, k) / comb(n, k)


def _last(records: list[R]) -> list[R]:
    """One record per unit: a resumed run that rewrote a unit keeps its last record."""
    return list({r.unit_id: r for r in records}.values())


def summarize_agent(reader: RunReader) -> AgentSummary:
    return summarize_agent_records(
        reader.records("agent_probe", ProbeRecord),
        reader.records("agent_tool_trial", ToolTrialRecord),
        reader.records("agent_bfcl_item", BFCLItemRecord),
        reader.records("agent_task_trial", TaskTrialRecord),
    )


def summarize_agent_records(
    probes: list[ProbeRecord],
    tools: list[ToolTrialRecord],
    bfcl: list[BFCLItemRecord],
    tasks: list[TaskTrialRecord],
) -> AgentSummary:
    probes = _last(probes)
    tools = _last(tools)
    bfcl = _last(bfcl)
    tasks = _last(tasks)

    rows = [ProbeRow(probe=p.probe, verdict=p.verdict, detail=p.detail) for p in probes]
    counts = Counter(p.verdict for p in probes)

    cases = []
    for case in dict.fromkeys(t.case for t in tools):
        ts = [t for t in tools if t.case == case]
        cases.append(
            ToolCaseScore(
                case=case,
                accuracy=proportion(sum(t.passed for t in ts), len(ts)),
                calls_per_message=dict(sorted(Counter(n for t in ts for n in t.calls_per_message).items())),
                messages_per_trial=dict(sorted(Counter(len(t.calls_per_message) for t in ts).items())),
                failure_reasons=dict(Counter(t.reason for t in ts if not t.passed)),
            )
        )

    cats = []
    for cat in dict.fromkeys(b.category for b in bfcl):
        bs = [b for b in bfcl if b.category == cat]
        cats.append(
            BFCLCategoryScore(
                category=cat,
                accuracy=proportion(sum(b.valid for b in bs), len(bs)),
                error_types=dict(Counter(b.error_type or "?" for b in bs if not b.valid)),
            )
        )

    task_rows = []
    for name in dict.fromkeys(t.task for t in tasks):
        tr = [t for t in tasks if t.task == name]
        n, c = len(tr), sum(t.passed for t in tr)
        toks = [
            sum(x.completion_tokens or 0 for x in t.turns)
            for t in tr
            if all(x.completion_tokens is not None for x in t.turns)
        ]
        task_rows.append(
            TaskScore(
                task=name,
                task_kind=tr[0].task_kind,
                trials=n,
                passed=c,
                pass_at_1=c / n,
                k=n,
                pass_hat_k=pass_hat_k(n, c, n),
                turns=describe([len(t.turns) for t in tr]),
                tool_calls=describe([sum(x.tool_calls for x in t.turns) for t in tr]),
                calls_per_turn=dict(sorted(Counter(x.tool_calls for t in tr for x in t.turns).items())),
                completion_tokens=describe(toks),
                wall_s=describe([t.wall_s for t in tr]),
                stop_reasons=dict(Counter(t.stop_reason for t in tr)),
                refused_paths=sum(t.refused_paths for t in tr),
                network=next((str(t.sandbox.get("network")) for t in tr if t.sandbox.get("network")), None),
                not_passed_why=_not_passed_why(tr),
            )
        )

    return AgentSummary(
        probes=rows,
        verdict_counts=dict(counts),
        silently_ignored=[p.probe for p in probes if p.verdict == "silently_ignored"],
        tool_cases=cases,
        tool_accuracy=proportion(sum(t.passed for t in tools), len(tools)) if tools else None,
        bfcl=cats,
        bfcl_accuracy=proportion(sum(b.valid for b in bfcl), len(bfcl)) if bfcl else None,
        bfcl_version=bfcl[0].bfcl_version if bfcl else None,
        tasks=task_rows,
    )


def _not_passed_why(trials: list[TaskTrialRecord]) -> dict[str, int]:
    """Per reason, how many repo-fix trials did not pass for it: each way a test ended other than
    passed ("tests skipped"), a rejected result stream, a changed file naming the test runner or the
    interpreter. Read from the grade kept with each trial (`sandbox.test_outcomes`, kept since issue 33)."""
    why: Counter[str] = Counter()
    for t in trials:
        outcomes = t.sandbox.get("test_outcomes")
        if t.passed or t.task_kind != "repo_fix" or not isinstance(outcomes, dict):
            continue
        reasons = {f"tests {o}" for o in outcomes.values() if o != "passed"}
        if t.sandbox.get("stream_problems"):
            reasons.add("result stream rejected")
        if "refer(s) to pytest" in t.grade_detail:
            reasons.add("a changed file names the test runner")
        if "reach(es) into the interpreter" in t.grade_detail:
            reasons.add("a changed file reaches into the interpreter")
        if not outcomes:
            reasons.add("no test ran")
        why.update(reasons)
    return dict(sorted(why.items()))
