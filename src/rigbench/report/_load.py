"""The load suite's report: schedule and throughput (with each window's steady state), latency percentiles
(service from the send, response from the intended start: p50 / p99 in every medium, and mean, median, std,
p90, p95, p99 in the Markdown and HTML), goodput with the knee as a bound, and a session run's figures per
turn. Built once as Sections, drawn three ways; the figures come from analysis/_load.py."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from rigbench.analysis import LoadComparison, LoadSummary, LoadWindowSummary, RateBound, Stat
from rigbench.outside import visible
from rigbench.report._cells import Cell, Note, Section, section_html, section_markdown, section_terminal

__all__ = ["PERCENTILES_TITLE", "capacity_text", "knee_short", "knee_text", "load_comparison_markdown",
           "load_comparison_section", "load_comparison_terminal", "load_html", "load_markdown", "load_sections",
           "load_terminal", "percentiles_terminal"]

PERCENTILES_TITLE = "Load: latency distribution (ms)"


def _ms(s: Stat | None, q: str) -> str:
    if s is None:
        return "–"
    v = {"p50": s.median, "p90": s.p90, "p95": s.p95, "p99": s.p99, "mean": s.mean, "std": s.std}[q]
    return "–" if v is None else f"{v * 1e3:.1f}"


def _pair(s: Stat | None) -> str:
    return f"{_ms(s, 'p50')} / {_ms(s, 'p99')}"


def _rate(w: LoadWindowSummary) -> str:
    if w.mode == "trace":
        return "trace" + (f" (mean {w.offered_rate_rps:.3g})" if w.offered_rate_rps is not None else "")
    if w.sessions is not None and w.offered_rate_rps is not None:
        return f"{w.offered_rate_rps:.3g} sessions/s"
    return "saturation" if w.offered_rate_rps is None else f"{w.offered_rate_rps:.3g}"


def _num(x: float | None, digits: str = ".3g") -> str:
    return "–" if x is None else format(x, digits)


def _arrival(w: LoadWindowSummary) -> str:
    if w.mode == "trace":
        return "trace"
    if w.arrival is None:
        return "all at once"
    return f"gamma (shape {w.burstiness:g})" if w.arrival == "gamma" else w.arrival


def _state(w: LoadWindowSummary) -> str | Cell:
    if w.steady is None:
        return "–"
    return w.steady.state if w.steady.state == "steady" else Cell(w.steady.state, "warn")


def _schedule(s: LoadSummary) -> Section:
    rows: list[list[str | Cell]] = []
    for w in s.windows:
        lag = _pair(w.send_lag_s)
        through = f"{w.throughput_rps:.3g}"
        rows.append([w.window, _rate(w), _arrival(w), str(w.requests),
                     Cell(str(w.failed), "error") if w.failed else "0",
                     _num(w.scheduled_rate_rps), _num(w.achieved_send_rate_rps),
                     lag if w.schedule_kept else Cell(lag, "warn"),
                     f"{w.slot_waits}" if w.max_concurrency else "–",
                     through if w.measured_over == "steady interval" or w.steady is None else Cell(through, "warn"),
                     f"{w.output_tok_s:.4g}", _state(w)])
    notes = [Note("offered: the rate asked for; scheduled: the rate of the drawn arrival times; sent: the rate the "
                  "client actually sent at. Send lag (ms, p50 / p99): the client's lateness against the schedule "
                  "(measured)."),
             Note("Throughput (measured): completed requests, and their output tokens, per second of the steady "
                  "interval of a window offering one rate: its ramp (the first 10% of its arrivals, or until the first "
                  "requests came back if longer) and its drain (after the last arrival) left out; steady: as many "
                  "requests ended in that interval as arrived, within chance; not sustained: the requests in flight "
                  "grew over it (the rate is over what the server serves); too short: no steady interval, the whole "
                  "window's figure, ramp and drain included, and left out of the knee. A burst, a trace or sessions: "
                  "the whole window, first intended start to last end.")]
    notes += [Note(f"{w.window}: {w.schedule_note}", "warn") for w in s.windows if not w.schedule_kept]
    notes += [Note(f"{w.window}: {w.steady.note}", "warn") for w in s.windows
              if w.steady is not None and w.steady.note is not None]
    if any(w.max_concurrency for w in s.windows):
        notes.append(Note("waited: requests held back by --max-concurrency; their wait counts in the response time."))
    if (c := capacity_text(s)) is not None:
        notes.append(Note(c, "notable"))
    return Section("Load: schedule and throughput",
                   ["window", "offered req/s", "arrival", "n", "failed", "scheduled req/s", "sent req/s",
                    "send lag ms", "waited", "throughput req/s", "output tok/s", "steady state"], rows, notes,
                   left_cols=3)


def _latency(s: LoadSummary) -> Section:
    rows = [[w.window, _rate(w), _pair(w.ttft_s), _pair(w.ttft_response_s), _pair(w.itl_s), _pair(w.e2e_s),
             _pair(w.e2e_response_s)] for w in s.windows]
    return Section("Load: latency percentiles (ms, p50 / p99)",
                   ["window", "offered req/s", "TTFT (service)", "TTFT (response)", "ITL (TPOT)", "e2e (service)",
                    "e2e (response)"], rows,
                   [Note("service: from the actual send; response: from the intended start in the arrival "
                         "schedule, what a user queued behind the others sees (no coordinated omission). ITL: per "
                         "request mean inter-token latency, the first token left out (TPOT in `vllm bench serve`, GuideLLM's and "
                         "AIPerf's ITL). Over the steady interval's arrivals where the window has one. All measured "
                         "on the client's clock.")], left_cols=2)


_FIGURES = (("TTFT (service)", "ttft_s"), ("TTFT (response)", "ttft_response_s"), ("ITL (TPOT)", "itl_s"),
            ("e2e (service)", "e2e_s"), ("e2e (response)", "e2e_response_s"), ("send lag", "send_lag_s"))


def _percentiles(s: LoadSummary) -> Section:
    """Every latency of every window as peers print them: n, mean, median, std, p90, p95, p99."""
    rows: list[list[str | Cell]] = []
    for w in s.windows:
        for name, field in _FIGURES:
            st: Stat | None = getattr(w, field)
            rows.append([w.window, _rate(w), name, str(st.n) if st else "0",
                         *(_ms(st, q) for q in ("mean", "p50", "std", "p90", "p95", "p99"))])
    return Section(PERCENTILES_TITLE, ["window", "offered req/s", "figure", "n", "mean", "median", "std", "p90", "p95",
                                       "p99"], rows,
                   [Note("The latencies of the table above in full, as GuideLLM, AIPerf and `vllm bench serve` print them (sample "
                         "standard deviation; percentiles by linear interpolation). JSON: `rigbench report RUN "
                         "--json`.")], left_cols=3)


def percentiles_terminal(console: Console, sec: Section) -> None:
    """The terminal stays compact: the full distribution is in the files (p50 / p99 are on screen)."""
    console.print(Text(visible(sec.title)), style="italic", highlight=False)
    console.print(Text(f"  {len(sec.rows)} rows of n, mean, median, std, p90, p95 and p99: in the Markdown (--markdown), "
                       "HTML (--html) and JSON (--json) reports"), highlight=False)
    for note in sec.notes:
        console.print(Text("  " + visible(note.text)), highlight=False)


def _turns(s: LoadSummary) -> Section | None:
    """A `--sessions` window's figures per turn."""
    rows: list[list[str | Cell]] = []
    for w in s.windows:
        for t in w.per_turn:
            rows.append([w.window, str(t.turn + 1), str(t.requests), Cell(str(t.failed), "error") if t.failed else "0",
                         _num(t.prompt_tokens.median if t.prompt_tokens else None, ".0f"),
                         _pair(t.ttft_response_s), _pair(t.itl_s), _pair(t.e2e_response_s)])
    if not rows:
        return None
    sessions = [w for w in s.windows if w.sessions is not None]
    notes = [Note(f"{w.window}: {w.sessions} sessions of {w.turns} turns started at {w.offered_rate_rps:.3g} "
                  f"sessions/s; {w.sessions_completed} completed every turn, {w.sessions_per_s or 0:.3g} sessions/s "
                  f"over the window ({w.window_s:.3g} s); {w.throughput_rps:.3g} turns/s (measured).")
             for w in sessions]
    notes.append(Note("A turn is sent as soon as the previous reply ended, with the whole history: its prompt (as the "
                      "server counted it, median) grows with the turn. Latencies in ms, p50 / p99, response time from "
                      "the turn's intended start; ITL per request (TPOT)."))
    return Section("Load: sessions, per turn", ["window", "turn", "n", "failed", "prompt tokens", "TTFT (response)",
                                                "ITL (TPOT)", "e2e (response)"], rows, notes, left_cols=2)


def knee_short(s: LoadSummary) -> str | None:
    """The knee in a few words ("between 63.2 and 79.1 req/s", "≥ 162 req/s (no tested rate missed the SLO)");
    None when there is none to give (one rate, no SLO, no rate judged)."""
    k = s.knee
    if k is None or (k.low_rps is None and k.high_rps is None):
        return None
    if k.bracketed:
        return f"between {k.low_rps:.3g} and {k.high_rps:.3g} req/s"
    if k.low_rps is not None:
        return f"≥ {k.low_rps:.3g} req/s (no tested rate missed the SLO)"
    return f"< {k.high_rps:.3g} req/s (every tested rate missed the SLO)"


def knee_text(s: LoadSummary) -> str | None:
    """The knee as a sentence for a report (None without an SLO)."""
    if s.slo is None:
        return None
    share = f"{s.attainment:.0%}"
    if len([w for w in s.rates if w.sessions is None]) < 2:
        return "One rate measured: a knee needs several (--sweep, or --rate R1,R2,...)."
    k = s.knee
    if k is None or (k.low_rps is None and k.high_rps is None):
        return "Knee: not bounded: no rate reached a steady state on schedule (marked above); raise --duration."
    if k.bracketed:
        return (f"Knee: between {k.low_rps:.3g} and {k.high_rps:.3g} req/s: {k.low_rps:.3g} is the highest offered rate "
                f"at which at least {share} of requests met every target; {k.high_rps:.3g} missed (or was not "
                "sustained).")
    if k.low_rps is not None:
        return (f"Knee: ≥ {k.low_rps:.3g} req/s: no tested rate missed the SLO (at least {share} of requests met "
                f"every target at each rate up to {k.low_rps:.3g}, the highest tested); it is a lower bound, not a "
                "knee: offer higher rates to find it.")
    return (f"Knee: < {k.high_rps:.3g} req/s: every tested rate missed the SLO (fewer than {share} of requests met "
            f"every target, or the rate was not sustained, down to {k.high_rps:.3g}, the lowest tested); offer lower "
            "rates (--rate) to find it.")


def capacity_text(s: LoadSummary) -> str | None:
    """Where the highest sustained rate lies among several tested rates (None: fewer than two, or none judged)."""
    c = s.capacity
    if c is None or (c.low_rps is None and c.high_rps is None):
        return None
    if c.bracketed:
        return (f"Sustained: between {c.low_rps:.3g} and {c.high_rps:.3g} req/s: {c.low_rps:.3g} was sustained, "
                f"{c.high_rps:.3g} was not (the queue grew).")
    if c.low_rps is not None:
        return f"Sustained: ≥ {c.low_rps:.3g} req/s: every tested rate up to {c.low_rps:.3g} was sustained."
    return f"Sustained: < {c.high_rps:.3g} req/s: no tested rate was sustained (the queue grew at each)."


def _goodput(s: LoadSummary) -> Section | None:
    if s.slo is None:
        return None
    targets = ", ".join(f"{name} ≤ {v * 1e3:g} ms" for name, v in (("TTFT", s.slo.ttft_s), ("ITL", s.slo.itl_s),
                                                                   ("e2e", s.slo.e2e_s)) if v is not None)
    rows: list[list[str | Cell]] = []
    knee = s.knee_rps
    for w in s.windows:
        if w.slo is None:
            continue
        missed = ", ".join(f"{k} {v}" for k, v in sorted(w.slo.missed.items())) or "–"
        frac = f"{w.slo.fraction:.1%}"
        at_knee = knee is not None and w.offered_rate_rps == knee
        rows.append([w.window + (" (knee)" if at_knee else ""), _rate(w),
                     Cell(frac, "ok") if w.slo.fraction >= s.attainment else Cell(frac, "warn"),
                     f"{w.slo.goodput_rps:.3g}", f"{w.throughput_rps:.3g}", missed, _state(w)])
    return Section(f"Load: goodput under the SLO ({targets})",
                   ["window", "offered req/s", "met SLO", "goodput req/s", "throughput req/s", "missed by",
                    "steady state"], rows,
                   [Note(knee_text(s) or "", "notable"),
                    Note("goodput: requests that met every target per second of the steady interval (of the whole "
                         "window where there is none; DistServe). TTFT and e2e targets are checked from the intended "
                         "start (response time); a failed request, or one without the figure a target needs, misses; "
                         "a rate not sustained meets no SLO for the knee, whatever its window saw.")], left_cols=2)


def load_sections(s: LoadSummary) -> list[Section]:
    out = [_schedule(s), _latency(s), _percentiles(s)]
    for sec in (_turns(s), _goodput(s)):
        if sec is not None:
            out.append(sec)
    return out


def load_terminal(s: LoadSummary, console: Console) -> None:
    for sec in load_sections(s):
        if sec.title == PERCENTILES_TITLE:
            percentiles_terminal(console, sec)
        else:
            section_terminal(console, sec)


def load_markdown(s: LoadSummary) -> str:
    return "\n\n".join(section_markdown(sec) for sec in load_sections(s))


def load_html(s: LoadSummary) -> str:
    return "".join(section_html(sec) for sec in load_sections(s))


def _v(x: float | None, scale: float = 1.0, fmt: str = ".3g") -> str:
    return "–" if x is None else format(x * scale, fmt)


def _knee_of(b: RateBound | None) -> str:
    if b is None or (b.low_rps is None and b.high_rps is None):
        return "none"
    if b.bracketed:
        return f"{b.low_rps:.3g}-{b.high_rps:.3g} req/s"
    return f"≥ {b.low_rps:.3g} req/s" if b.low_rps is not None else f"< {b.high_rps:.3g} req/s"


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
    notes = [Note(f"Knee: {baseline} {_knee_of(c.baseline_knee)}, {other} {_knee_of(c.other_knee)}; "
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
