"""The stability table: each speed series' spread over repetitions and what the rules found in it (a change
during the run, outliers, an unstable spread), with what the rules can tell at this many repetitions."""

from __future__ import annotations

from rigbench.analysis import MIN_REPETITIONS, QUIET_SPREAD, SeriesStability, detectable
from rigbench.report._cells import Cell, Note, Section

__all__ = ["stability_section"]

_NAMES = {"decode_tok_s": "decode tok/s", "aggregate_tok_s": "aggregate tok/s", "ttft_s": "TTFT"}


def _found(s: SeriesStability) -> str | Cell:
    if not s.judged:
        return "not judged"
    if s.change is not None:
        return Cell(f"{'rose' if s.change > 0 else 'fell'} {abs(s.change):.0%} from rep {s.shown_change_at}", "warn")
    if s.outliers:
        return Cell(f"outlier: rep {', '.join(str(r) for r in s.shown_outliers)}", "warn")
    if s.unstable:
        return Cell("unstable", "warn")
    return "steady"


def _can_tell(ns: list[int]) -> Note | None:
    """What the rules can name at the repetitions of the judged series (the default run: 5)."""
    judged = sorted({n for n in ns if n >= MIN_REPETITIONS})
    if not judged:
        return None
    parts = []
    for n in judged:
        d = detectable(n)
        change = f"a change of {d.change:.0%} between its halves" if d.change is not None else "no change (too few)"
        parts.append(f"at {n} repetitions: one value {d.outlier:.0%} off the median, {change}, a CV of "
                     f"{d.cv:.0%}" if d.outlier is not None and d.cv is not None else f"at {n}: nothing")
    return Note("What the rules can tell, on a series no more spread than a quiet host's: " + "; ".join(parts)
                + ". Smaller effects are within the spread a quiet host shows between repetitions at this n "
                "(raise --repetitions to see them).", "muted")


def stability_section(stab: list[SeriesStability]) -> Section:
    """One row per scenario, level and series; a finding that draws a warning is marked."""
    rows: list[list[str | Cell]] = []
    for s in stab:
        cv = "–" if s.cv is None else f"{s.cv:.1%}"
        rows.append([f"{s.scenario} c={s.concurrency}", _NAMES.get(s.series, s.series), str(len(s.values)),
                     Cell(cv, "warn") if s.unstable else cv, _found(s)])
    bad = sum(1 for s in stab if s.judged and s.flagged)
    judgeable = [s for s in stab if s.series != "ttft_s"]
    few = [s for s in judgeable if len(s.values) < MIN_REPETITIONS]
    title = (f"Stability over repetitions: {bad} series changed, with an outlier, or unstable" if bad
             else f"Stability over repetitions: not judged (fewer than {MIN_REPETITIONS} repetitions)"
             if judgeable and len(few) == len(judgeable) else "Stability over repetitions: every series judged is steady")
    notes = [Note(f"One value per repetition (the median of its requests). Each series is judged against its own "
                  f"spread or a quiet host's ({QUIET_SPREAD:.0%} of the median), whichever is wider: a change is "
                  "a step between two runs of repetitions, every value of one beyond every value of the other; an "
                  "outlier is one value far from the median; unstable is a CV above 10% beyond chance. TTFT is "
                  "shown, not judged (a fast server's TTFT spread is mostly timer jitter). Rules and calibration: "
                  "docs/honesty.md, \"Stability over repetitions\".")]
    tell = _can_tell([len(s.values) for s in stab if s.judged])
    if tell is not None:
        notes.append(tell)
    if few:
        notes.append(Note(f"{len(few)} series have fewer than {MIN_REPETITIONS} repetitions: their spread is shown "
                          "but not judged; raise --repetitions to judge it", "muted"))
    return Section(title, ["window", "series", "n", "CV", "found"], rows, notes=notes,
                   title_severity="warn" if bad else None, left_cols=2)
