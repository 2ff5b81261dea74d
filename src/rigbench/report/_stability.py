"""The stability table: each speed series' spread, drift and outliers over repetitions, as a Section."""

from __future__ import annotations

from rigbench.analysis import MIN_REPETITIONS, OUTLIER_Z, UNSTABLE_CV, SeriesStability
from rigbench.report._cells import Cell, Note, Section

__all__ = ["stability_section"]

_NAMES = {"decode_tok_s": "decode tok/s", "aggregate_tok_s": "aggregate tok/s", "ttft_s": "TTFT"}


def stability_section(stab: list[SeriesStability]) -> Section:
    """One row per scenario, level and series; a figure that draws a warning is marked."""
    rows: list[list[str | Cell]] = []
    for s in stab:
        cv = "–" if s.cv is None else f"{s.cv:.1%}"
        drift = "–" if s.drift is None else f"{s.drift:+.1%}" + (f" (p {s.trend_p:.3f})" if s.trend_p is not None
                                                                else "")
        out = ", ".join(str(r) for r in s.outliers) or "none"
        rows.append([f"{s.scenario} c={s.concurrency}", _NAMES.get(s.series, s.series), str(len(s.values)),
                     Cell(cv, "warn") if s.unstable else cv, Cell(drift, "warn") if s.drifting else drift,
                     Cell(out, "warn") if s.judged and s.outliers else out])
    bad = sum(1 for s in stab if s.unstable or s.drifting or (s.judged and s.outliers))
    few = [s for s in stab if len(s.values) < MIN_REPETITIONS]
    title = (f"Stability over repetitions: {bad} series unstable, drifting or with outliers" if bad
             else f"Stability over repetitions: not judged (fewer than {MIN_REPETITIONS} repetitions)"
             if len(few) == len(stab) else "Stability over repetitions: every series judged is steady")
    extra = ([Note(f"{len(few)} series have fewer than {MIN_REPETITIONS} repetitions: their spread is shown but "
                   "not judged; raise --repetitions to judge it", "warn")] if few else [])
    return Section(title, ["window", "series", "n", "CV", "drift (2nd half vs 1st)", "outliers (repetition)"], rows,
                   notes=[Note(f"One value per repetition (the median of its requests). CV = standard deviation / "
                               f"mean, unstable above {UNSTABLE_CV:.0%}; drift: second half of the repetitions "
                               "against the first, judged by Kendall's tau (p < 0.05, at least 5%); outliers: over "
                               f"{OUTLIER_Z:g} robust deviations (1.4826 x MAD) from the median. TTFT is shown, not "
                               "judged (a fast server's TTFT spread is mostly timer jitter)."), *extra],
                   short_head=["window", "series", "n", "CV", "drift", "outliers"],
                   title_severity="warn" if bad else None, left_cols=2)
