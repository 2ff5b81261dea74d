"""The load suite's report: schedule and throughput, latency percentiles (service from the send,
response from the intended start), and goodput with the knee. Built once as Sections, drawn three
ways; the figures come from analysis/_load.py."""

from __future__ import annotations

from rich.console import Console

from rigbench.analysis import LoadComparison, LoadSummary, LoadWindowSummary, Stat
from rigbench.report._cells import Cell, Note, Section, section_html, section_markdown, section_terminal

__all__ = ["load_comparison_markdown", "load_comparison_section", "load_comparison_terminal", "load_html", "load_markdown", "load_sections", "load_terminal"]


def _ms(s: Stat | None, q: str) -> str:
    if s is None:
        return "–"
    v = {"p50": s.median, "p90": s.p90, "p99": s.p99}[q]
    return "–" if v is None else f"{v * 1e3:.1f}"


def _pair(s: Stat | None) -> str:
    return f"{_ms(s, 'p50')} / {_ms(s, 'p99')}"


def _rate(w: LoadWindowSummary) -> str:
    if w.mode == "trace":
        return "trace" + (f" (mean {w.offered_rate_rps:.3g})" if w.offered_rate_rps is not None else "")
    return "saturation" if w.offered_rate_rps is None else f"{w.offered_rate_rps:.3g}"


def _num(x: float | None, digits: str = ".3g") -> str:
    return "–" if x is None else format(x, digits)


def _arrival(w: LoadWindowSummary) -> str:
    if w.mode == "trace":
        return "trace"
    if w.arrival is None:
        return "all at once"
    return f"gamma (shape {w.burstiness:g})" if w.arrival == "gamma" else w.arrival


def _schedule(s: LoadSummary) -> Section:
    rows: list[list[str | Cell]] = []
    for w in s.windows:
        lag = _pair(w.send_lag_s)
        rows.append([w.window, _rate(w), _arrival(w), str(w.requests),
                     Cell(str(w.failed), "error") if w.failed else "0",
                     _num(w.scheduled_rate_rps), _num(w.achieved_send_rate_rps),
                     lag if w.schedule_kept else Cell(lag, "warn"),
                     f"{w.slot_waits}" if w.max_concurrency else "–",
                     f"{w.throughput_rps:.3g}", f"{w.output_tok_s:.4g}"])
    notes = [Note("offered: the rate asked for; scheduled: the rate of the drawn arrival times; sent: the rate the "
                  "client actually sent at. Send lag (ms, p50 / p99): the client's lateness against the schedule "
                  "(measured). Throughput: completed requests per second of the window, first intended start to "
                  "last end (measured).")]
    notes += [Note(f"{w.window}: {w.schedule_note}", "warn") for w in s.windows if not w.schedule_kept]
    if any(w.max_concurrency for w in s.windows):
        notes.append(Note("waited: requests held back by --max-concurrency; their wait counts in the response time."))
    return Section("Load: schedule and throughput",
                   ["window", "offered req/s", "arrival", "n", "failed", "scheduled req/s", "sent req/s",
                    "send lag ms", "waited", "throughput req/s", "output tok/s"], rows, notes, left_cols=3)


def _latency(s: LoadSummary) -> Section:
    rows = [[w.window, _rate(w), _pair(w.ttft_s), _pair(w.ttft_response_s), _pair(w.itl_s), _pair(w.e2e_s),
             _pair(w.e2e_response_s)] for w in s.windows]
    return Section("Load: latency percentiles (ms, p50 / p99)",
                   ["window", "offered req/s", "TTFT (service)", "TTFT (response)", "ITL", "e2e (service)",
                    "e2e (response)"], rows,
                   [Note("service: from the actual send; response: from the intended start in the arrival "
                         "schedule, what a user queued behind the others sees (no coordinated omission). ITL: per "
                         "request mean inter-token latency. All measured on the client's clock.")], left_cols=2)


def _goodput(s: LoadSummary) -> Section | None:
    if s.slo is None:
        return None
    targets = ", ".join(f"{name} ≤ {v * 1e3:g} ms" for name, v in (("TTFT", s.slo.ttft_s), ("ITL", s.slo.itl_s),
                                                                   ("e2e", s.slo.e2e_s)) if v is not None)
    rows: list[list[str | Cell]] = []
    for w in s.windows:
        if w.slo is None:
            continue
        missed = ", ".join(f"{k} {v}" for k, v in sorted(w.slo.missed.items())) or "–"
        frac = f"{w.slo.fraction:.1%}"
        at_knee = s.knee_rps is not None and w.offered_rate_rps == s.knee_rps
        rows.append([w.window + (" (knee)" if at_knee else ""), _rate(w),
                     Cell(frac, "ok") if w.slo.fraction >= s.attainment else Cell(frac, "warn"),
                     f"{w.slo.goodput_rps:.3g}", f"{w.throughput_rps:.3g}", missed])
    sweep = len(s.rates) > 1
    knee_note = ("One rate measured: a knee needs several (--sweep)." if not sweep else
            f"Knee: {s.knee_rps:.3g} req/s, the highest offered rate at which at least {s.attainment:.0%} of "
            "requests met every target." if s.knee_rps is not None
            else f"Knee: none: no offered rate had {s.attainment:.0%} of its requests meet every target.")
    return Section(f"Load: goodput under the SLO ({targets})",
                   ["window", "offered req/s", "met SLO", "goodput req/s", "throughput req/s", "missed by"], rows,
                   [Note(knee_note, "notable"),
                    Note("goodput: requests that met every target per second of the window (DistServe). TTFT and "
                         "e2e targets are checked from the intended start (response time); a failed request "
                         "misses.")], left_cols=2)


def load_sections(s: LoadSummary) -> list[Section]:
    out = [_schedule(s), _latency(s)]
    g = _goodput(s)
    return out + ([g] if g is not None else [])


def load_terminal(s: LoadSummary, console: Console) -> None:
    for sec in load_sections(s):
        section_terminal(console, sec)


def load_markdown(s: LoadSummary) -> str:
    return "\n\n".join(section_markdown(sec) for sec in load_sections(s))


def load_html(s: LoadSummary) -> str:
    return "".join(section_html(sec) for sec in load_sections(s))


def _v(x: float | None, scale: float = 1.0, fmt: str = ".3g") -> str:
    return "–" if x is None else format(x * scale, fmt)


def load_comparison_section(c: LoadComparison, baseline: str, other: str) -> Section:
    """Two rate-mode runs at the baseline's offered rates (analysis/_load_compare.py)."""
    rows: list[list[str | Cell]] = []
    for r in c.rows:
        verdict = r.ttft_test.verdict if r.ttft_test is not None else "–"
        rows.append([f"{r.offered_rate_rps:.3g}", Cell(r.basis, "warn") if r.basis != "measured" else r.basis,
                     f"{_v(r.baseline_throughput_rps)} / {_v(r.other_throughput_rps)}",
                     f"{_v(r.baseline_goodput_rps)} / {_v(r.other_goodput_rps)}",
                     f"{_v(r.baseline_ttft_p50_s, 1e3, '.1f')} / {_v(r.other_ttft_p50_s, 1e3, '.1f')}",
                     f"{_v(r.baseline_e2e_p99_s, 1e3, '.1f')} / {_v(r.other_e2e_p99_s, 1e3, '.1f')}", verdict])
    notes = [Note(f"Knee: {baseline} {_v(c.baseline_knee_rps)} req/s, {other} {_v(c.other_knee_rps)} req/s; "
                  f"saturation {_v(c.baseline_saturation_rps)} vs {_v(c.other_saturation_rps)} req/s (measured)."),
             Note(f"At each offered rate {baseline} measured: {other}'s window at that rate (measured, with a Welch "
                  "t-test on response TTFT), else linear interpolation between its two nearest rates (interpolated: "
                  "an estimate, no test), else none (out of range). TTFT and e2e are response times (ms).")]
    return Section(f"Load: {other} against {baseline} at equal offered rate",
                   ["offered req/s", f"{other}'s figures", "throughput req/s", "goodput req/s", "TTFT p50 ms",
                    "e2e p99 ms", "TTFT test"], rows, notes, left_cols=2)


def load_comparison_terminal(c: LoadComparison, console: Console, baseline: str, other: str) -> None:
    section_terminal(console, load_comparison_section(c, baseline, other))


def load_comparison_markdown(c: LoadComparison, baseline: str, other: str) -> str:
    return section_markdown(load_comparison_section(c, baseline, other))
