"""Speculative decoding: acceptance per scenario, and predicted speed-ups calibrated on a baseline.

The H200 validation (docs/gpu-validation.md) showed that a free-drafter model (speed-up from the
acceptance length and prefill share alone) over-predicts by 1.6-2.8x: a drafter costs target
steps. So when a baseline run exists, the draft cost `c` is calibrated on the most decode-heavy
scenario and the other scenarios are predicted with it.
"""

from __future__ import annotations

from statistics import median

from rigbench.analysis._roofline import SpeedupPrediction, predict_speedup
from rigbench.analysis._speed import summarize_speed
from rigbench.records import Frozen, SpeedRequest
from rigbench.store import RunReader

__all__ = ["SpeculationFit", "acceptance_by_scenario", "acceptance_samples", "fit_speculation"]


def acceptance_samples(reader: RunReader) -> dict[str, list[float]]:
    """Per-request mean acceptance length (bonus token included) by scenario, from the server's
    per-request `timings` (llama.cpp: predicted_n, draft_n_accepted); requests without them are absent."""
    out: dict[str, list[float]] = {}
    for r in reader.records("speed_request", SpeedRequest):
        t = r.result.timings or {}
        n, acc = t.get("predicted_n"), t.get("draft_n_accepted")
        if r.warmup or not isinstance(n, int) or not isinstance(acc, int) or n - acc <= 0:
            continue
        out.setdefault(r.scenario, []).append(n / (n - acc))
    return out


def acceptance_by_scenario(reader: RunReader) -> dict[str, float]:
    """Median of `acceptance_samples` per scenario."""
    return {k: median(v) for k, v in acceptance_samples(reader).items()}


class SpeculationFit(Frozen):
    calibrated_on: str | None  # scenario whose decode speed-up fixed the draft cost; None: not calibrated
    draft_cost_ratio: float  # c: a verification step's drafting cost, in target decode steps
    predictions: list[SpeedupPrediction]  # with c (upper bound with c = 0 when not calibrated)
    free_drafter: list[SpeedupPrediction]  # the c = 0 bound, for comparison


def fit_speculation(baseline: RunReader, spec: RunReader, acceptance: dict[str, float] | None = None) -> SpeculationFit | None:
    """Predict `spec`'s end-to-end speed-up over `baseline` per scenario (concurrency 1).

    Prefill share comes from the baseline (drafting leaves prefill alone); acceptance from `spec`.
    """
    base_sum, spec_sum = summarize_speed(baseline), summarize_speed(spec)
    if base_sum is None or spec_sum is None:
        return None
    acc = acceptance if acceptance is not None else acceptance_by_scenario(spec)
    base = {r.scenario: r for r in base_sum.rows if r.concurrency == 1}
    sp = {r.scenario: r for r in spec_sum.rows if r.concurrency == 1}
    common = [s for s in base if s in sp and s in acc and base[s].prefill_share is not None]
    if not common:
        return None
    cal = min(common, key=lambda s: base[s].prefill_share or 0.0)
    bd, sd = base[cal].decode_tok_s, sp[cal].decode_tok_s
    c = 0.0
    calibrated: str | None = None
    if bd and sd and bd.median > 0 and sd.median > 0:
        c = max(0.0, acc[cal] * bd.median / sd.median - 1.0)
        calibrated = cal
    preds, free = [], []
    for s in common:
        p = base[s].prefill_share or 0.0
        be, se = base[s].e2e_tok_s, sp[s].e2e_tok_s
        measured = se.median / be.median if be and se and be.median > 0 else None
        preds.append(predict_speedup(s, prefill_share=p, mean_acceptance_length=acc[s], draft_cost_ratio=c,
                                     measured_speedup=measured))
        free.append(predict_speedup(s, prefill_share=p, mean_acceptance_length=acc[s], measured_speedup=measured))
    return SpeculationFit(calibrated_on=calibrated, draft_cost_ratio=c, predictions=preds, free_drafter=free)
