"""Re-measurements: two runs of the same rig (same configuration and fingerprint) at different
dates, and whether the later one reproduces the earlier (seed 000's "Updated ..." note): the same
within the margin by an equivalence test, different by a significance test, or inconclusive."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis._compare import ScenarioComparison, compare_stats, fingerprint_differences
from rigbench.analysis._run import RunAnalysis
from rigbench.analysis._verdict import Verdict
from rigbench.records import Frozen

__all__ = ["Revision", "find_revisions"]

# A rig that drafts and the same rig that does not are two configurations, not a re-measurement, even
# attached to one endpoint with one plan (whether it drafts is then known from the server alone). A field
# unknown on one side is no difference (a run before format 10 has no speculation state).
_DRAFTING = ("speculative", "speculation.state", "draft_model.sha256")


class Revision(Frozen):
    earlier_name: str
    later_name: str
    earlier_date: str
    later_date: str
    verdict: Verdict  # differs if any scenario differs; same if every scenario is; else inconclusive
    rows: list[ScenarioComparison]


def _identity(a: RunAnalysis) -> Any:
    """What makes two runs the same measurement: the resolved rig and suite settings."""
    return (a.header.plan.get("rig"), a.header.plan.get("suites"), a.header.fingerprint.speculative if a.header.fingerprint else None)


def find_revisions(names: Sequence[str], analyses: Sequence[RunAnalysis], *,
                   metric: str = "e2e_tok_s") -> list[Revision]:
    out: list[Revision] = []
    items = sorted(zip(names, analyses, strict=True), key=lambda p: p[1].header.created_at)
    for i, (na, a) in enumerate(items):
        for nb, b in items[i + 1:]:
            if b.header.created_at == a.header.created_at or _identity(a) != _identity(b):
                continue
            fa, fb = a.header.fingerprint, b.header.fingerprint
            if fa is None or fb is None or any(d.matters or d.field in _DRAFTING
                                               for d in fingerprint_differences(fa, fb)):
                continue
            rows_b = {(r.scenario, r.concurrency): r for r in (b.speed.rows if b.speed else [])}
            rows = []
            for ra in a.speed.rows if a.speed else []:
                rb = rows_b.get((ra.scenario, ra.concurrency))
                sa, sb = getattr(ra, metric), getattr(rb, metric) if rb else None
                if sa is None or sb is None:
                    continue
                rows.append(ScenarioComparison(scenario=ra.scenario, concurrency=ra.concurrency, metric=metric,
                                               baseline=sa, other=sb, result=compare_stats(sa, sb)))
            if not rows:
                continue
            verdicts = {r.result.verdict for r in rows}
            verdict: Verdict = ("differs" if "differs" in verdicts else
                                "same" if verdicts == {"same"} else "inconclusive")
            out.append(Revision(earlier_name=na, later_name=nb, earlier_date=a.header.created_at,
                                later_date=b.header.created_at, verdict=verdict, rows=rows))
    return out
