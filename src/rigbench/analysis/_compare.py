"""Compare runs: per scenario a ratio with its propagated error, Welch's t-test for a difference and
two one-sided tests for equivalence within a margin.

"Two runs are called different only when a significance test says so, and the same only when an
equivalence test says so" (DESIGN, honesty rule 3). Seed 000 re-ran its fastest configuration,
20.97 ± 1.22 vs 22.39 ± 2.21 tok/s over five repetitions (t = 1.26, p = 0.25), and called it a
reproduction; by the numbers it is inconclusive at ±5% (the 90% interval of the ratio reaches
past 1.05), and about 45 repetitions per side would tell.

Formulas (docs/metrics.md, "Statistics and models"):
  ratio r = mean_B / mean_A
  error  sigma_r = r * sqrt((se_A / mean_A)^2 + (se_B / mean_B)^2), se = std / sqrt(n)
  Welch t-test: scipy.stats.ttest_ind_from_stats(mean_B, std_B, n_B, mean_A, std_A, n_A, equal_var=False)
  TOST on the ratio within [1 - margin, 1 + margin]: `analysis._verdict.ratio_tost`
  verdict: "same" (TOST p < alpha), else "differs" (Welch p < alpha), else "inconclusive" with the
  repetitions per side that would decide (`analysis._verdict.repetitions_needed`).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field

from rigbench.analysis._host import assess_host
from rigbench.analysis._session import session_neutral
from rigbench.analysis._speed import ScenarioSpeed, summarize_speed
from rigbench.analysis._stats import Stat
from rigbench.analysis._verdict import DEFAULT_MARGIN, Verdict, ratio_tost, repetitions_needed, three_way
from rigbench.errors import UsageError
from rigbench.records import Fingerprint, Frozen, HostConditions
from rigbench.store import RunReader, source_data_id

__all__ = [
    "COMPARE_METRICS",
    "Comparison",
    "FingerprintDifference",
    "ScenarioComparison",
    "StatComparison",
    "busy_windows",
    "check_two_runs",
    "compare_runs",
    "compare_stats",
    "fingerprint_differences",
]

COMPARE_METRICS = ("e2e_tok_s", "decode_tok_s", "aggregate_tok_s", "ttft_s")

# Fingerprint fields (dotted paths) that change what is being measured. A speed-up table compares
# rigs that differ on purpose in flags (argv, speculative, draft model), so those never block.
MATTERING_FIELDS = (
    "engine", "engine_version", "model.served_name", "model.sha256", "model.size_bytes", "chat_template_sha256",
    "host.cpu_model", "host.gpus", "host.memory_bytes", "host_is_server",
    # the package rigbench made llama-server from: the prebuilt's own build info reads b0-unknown, so two
    # prebuilt versions differ here only
    "engine_binary.package",
)
INFORMATIONAL_FIELDS = ("argv", "speculative", "speculation.state", "draft_model.sha256", "context_length", "slots", "model.path",
                        "endpoint", "engine_binary.build_variant", "engine_binary.fallback")  # CPU build/fallback


class StatComparison(Frozen):
    ratio: float | None  # mean_B / mean_A
    ratio_err: float | None  # propagated standard error of the ratio
    t: float | None
    p: float | None  # Welch's two-sided p: a difference
    df: float | None  # Welch-Satterthwaite degrees of freedom
    verdict: Verdict
    alpha: float
    margin: float = DEFAULT_MARGIN  # relative: 0.05 is "same within ±5%"
    p_equiv: float | None = None  # TOST p (the larger one-sided p): same within the margin when < alpha
    needed_n: int | None = None  # inconclusive: repetitions per side that would tell ±margin (80% power)
    reason: str | None = None  # inconclusive without a power figure: why


def _cv(s: Stat) -> float | None:
    return s.std / abs(s.mean) if s.n >= 2 and s.mean != 0 else None


def compare_stats(a: Stat, b: Stat, *, alpha: float = 0.05, margin: float = DEFAULT_MARGIN) -> StatComparison:
    """B against A (A is the baseline)."""
    ratio = err = None
    if a.mean != 0:
        ratio = b.mean / a.mean
        if a.n > 0 and b.n > 0 and b.mean != 0:
            rel = math.hypot((a.std / math.sqrt(a.n)) / a.mean, (b.std / math.sqrt(b.n)) / b.mean)
            err = abs(ratio) * rel
    if a.n < 2 or b.n < 2:
        needed = repetitions_needed(_cv(a), _cv(b), margin=margin, alpha=alpha)
        reason = None if needed is not None else "one repetition on each side: no spread to test against"
        return StatComparison(ratio=ratio, ratio_err=err, t=None, p=None, df=None, verdict="inconclusive",
                              alpha=alpha, margin=margin, needed_n=max(needed, 2) if needed else None, reason=reason)
    from scipy import stats as _st  # lazy: scipy.stats costs 1-2.5 s at start-up

    res = _st.ttest_ind_from_stats(b.mean, b.std, b.n, a.mean, a.std, a.n, equal_var=False)
    t, p = float(res.statistic), float(res.pvalue)
    df = _welch_df(a, b)
    tost = ratio_tost(a.mean, a.std, a.n, b.mean, b.std, b.n, margin)
    if math.isnan(p):  # both samples without spread: the means decide exactly
        within = ratio is not None and abs(ratio - 1) < margin
        verdict = three_way(significant=a.mean != b.mean, equivalent=within)
    else:
        verdict = three_way(significant=p < alpha, equivalent=tost is not None and tost.p < alpha)
    needed = repetitions_needed(_cv(a), _cv(b), margin=margin, alpha=alpha) if verdict == "inconclusive" else None
    return StatComparison(ratio=ratio, ratio_err=err, t=None if math.isnan(t) else t,
                          p=None if math.isnan(p) else p, df=df, verdict=verdict, alpha=alpha, margin=margin,
                          p_equiv=None if tost is None else tost.p, needed_n=needed)


def _welch_df(a: Stat, b: Stat) -> float | None:
    va, vb = a.std**2 / a.n, b.std**2 / b.n
    den = va**2 / (a.n - 1) + vb**2 / (b.n - 1)
    return (va + vb) ** 2 / den if den > 0 else None


class FingerprintDifference(Frozen):
    field: str
    baseline: Any
    other: Any
    matters: bool


def _get(d: dict[str, Any], dotted: str) -> Any:
    cur: Any = d
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _described(fp: Fingerprint | dict[str, Any] | None) -> dict[str, Any]:
    """The recorded description the comparison reads: the fingerprint as run.json holds it."""
    return {} if fp is None else fp.model_dump(mode="json") if isinstance(fp, Fingerprint) else fp


def fingerprint_differences(a: Fingerprint | dict[str, Any] | None,
                            b: Fingerprint | dict[str, Any] | None) -> list[FingerprintDifference]:
    """Fields whose values differ. A field unknown on either side (None) is not a difference."""
    a, b = _described(a), _described(b)
    out: list[FingerprintDifference] = []
    for fields, matters in ((MATTERING_FIELDS, True), (INFORMATIONAL_FIELDS, False)):
        for f in fields:
            va, vb = _get(a, f), _get(b, f)
            # the port a server happened to get, or its temporary directory, is no difference of rig
            if va is None or vb is None or session_neutral(va) == session_neutral(vb):
                continue
            out.append(FingerprintDifference(field=f, baseline=va, other=vb, matters=matters))
    # a model known on one side only by its hash is still the same question
    return out


class ScenarioComparison(Frozen):
    scenario: str
    concurrency: int
    metric: str
    baseline: Stat
    other: Stat
    result: StatComparison


class Comparison(Frozen):
    kind: Literal["comparison"] = "comparison"
    baseline_run: str
    other_run: str
    baseline_source_data_id: str
    other_source_data_id: str
    metric: str
    alpha: float
    rows: list[ScenarioComparison]
    margin: float = DEFAULT_MARGIN
    differences: list[FingerprintDifference] = Field(default_factory=list)
    mismatch_allowed: bool = False
    missing: list[str] = Field(default_factory=list)  # scenario@c present in one run only
    # scenario@c run on another shape in each (its in/out tokens: e.g. the quick profile before and after
    # 2026-12-03, or quick against full): not compared, since a ratio would measure the workload change
    other_shape: list[str] = Field(default_factory=list)


def check_two_runs(a: RunReader, b: RunReader) -> None:
    """Raises UsageError when `a` and `b` are one run (the same directory, or a copy of its data):
    a run against itself has no second measurement, so any verdict would be about nothing."""
    same_dir = a.dir.resolve() == b.dir.resolve()
    # recomputed, not read from the headers: a hand-edited copy keeps its original's stored id
    same_data = not same_dir and source_data_id(a.dir) == source_data_id(b.dir)
    if same_dir or same_data:
        how = "is given twice" if same_dir else f"and {b.dir} hold the same data (source data {source_data_id(a.dir)})"
        raise UsageError(f"{a.dir} {how}: that is one run, not two. Comparing it with itself measures "
                         "nothing; re-run the rig (rigbench run) and compare the two runs.")


def busy_windows(reader: RunReader) -> list[str]:
    """The measured windows of a run that its host conditions judge busy, each with its cause ("during
    chat_short c=1, other processes used 0.98 of 2 cores ..."): `rigbench compare` says so beside the ratios,
    since a busy side's figures hold the host's load, not its rig alone. Empty: quiet, or not recorded."""
    return assess_host(reader.records("host_conditions", HostConditions)).findings


def _speed_rows(reader: RunReader) -> dict[tuple[str, int], ScenarioSpeed]:
    summary = summarize_speed(reader)
    if summary is None:
        raise UsageError(f"{reader.dir} has no speed records to compare. Compare runs of the speed suite.")
    return {(r.scenario, r.concurrency): r for r in summary.rows}


def compare_runs(baseline: RunReader, others: list[RunReader], *, metric: str = "e2e_tok_s",
                 alpha: float = 0.05, allow_mismatch: bool = False,
                 margin: float = DEFAULT_MARGIN) -> list[Comparison]:
    """Baseline against each other run, scenario by scenario.

    Raises UsageError, listing the differences, when fingerprints differ in a field that changes
    what is measured (model bytes, engine version, host...) unless `allow_mismatch`.
    """
    if metric not in COMPARE_METRICS:
        raise UsageError(f"cannot compare on {metric!r}; choose one of {', '.join(COMPARE_METRICS)}.")
    base_rows = _speed_rows(baseline)
    out: list[Comparison] = []
    for other in others:
        check_two_runs(baseline, other)
        diffs = fingerprint_differences(baseline.header.fingerprint, other.header.fingerprint)
        blocking = [d for d in diffs if d.matters]
        if blocking and not allow_mismatch:
            lines = "\n".join(f"  {d.field}: {d.baseline!r} vs {d.other!r}" for d in blocking)
            raise UsageError(
                f"{baseline.dir.name} and {other.dir.name} were not measured on the same rig:\n{lines}\n"
                "A ratio between them mixes the rig change with the flag change. Re-run on the same rig, "
                "or pass --allow-mismatch to compare anyway (the differences are printed with the result)."
            )
        rows_o = _speed_rows(other)
        rows: list[ScenarioComparison] = []
        other_shape: list[str] = []
        for key, ra in base_rows.items():
            rb = rows_o.get(key)
            if rb is None:
                continue
            shape_a = (ra.input_tokens_target, ra.output_tokens_target)
            shape_b = (rb.input_tokens_target, rb.output_tokens_target)
            if shape_a != shape_b:
                other_shape.append(f"{key[0]}@c{key[1]} ({shape_a[0]}→{shape_a[1]} tokens in A, "
                                   f"{shape_b[0]}→{shape_b[1]} in B)")
                continue
            sa, sb = getattr(ra, metric), getattr(rb, metric)
            if sa is None or sb is None:
                continue
            rows.append(ScenarioComparison(scenario=key[0], concurrency=key[1], metric=metric, baseline=sa,
                                           other=sb, result=compare_stats(sa, sb, alpha=alpha, margin=margin)))
        missing = [f"{s}@c{c}" for (s, c) in sorted(set(base_rows) ^ set(rows_o))]
        out.append(Comparison(
            baseline_run=baseline.dir.name, other_run=other.dir.name,
            baseline_source_data_id=baseline.source_data_id, other_source_data_id=other.source_data_id,
            metric=metric, alpha=alpha, margin=margin, rows=rows, differences=diffs, mismatch_allowed=bool(blocking),
            missing=missing, other_shape=other_shape,
        ))
    return out
