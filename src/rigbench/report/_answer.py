"""The answer first: the few figures a reader of one run came for, and what they mean for a user, before
any detail table (issue 31 item 4, issue 30 item 4).

Each run kind answers its own question:
- speed: per scenario, the median request's first token and decode speed at the lowest concurrency,
  the aggregate at the highest, and what that means for a person waiting (analysis/_experience.py);
- load (rate mode, a sweep, a trace replay, sessions): the saturation throughput and the knee (or
  its bound), then per window what was offered and done, the response-time percentiles, the send lag
  and the share that met the SLO;
- quality: MMLU-Pro's accuracy against chance, each task pack's score;
- agent: the probe counts (silently ignored ones named), tool-call and BFCL accuracy, tasks' pass^k.

Built once per run (`Answer`: a Section of report/_cells.py and the same figures as summary lines): the
terminal draws the sections under the findings panel, the Markdown under its title, the HTML as its
headline figures (several runs: one table per kind with a run column), and the end-of-report summary
prints the lines. They format analysis results; they compute nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rigbench.analysis import (
    READING_TOK_S,
    AgentSummary,
    LoadSummary,
    LoadWindowSummary,
    Proportion,
    QualitySummary,
    RunAnalysis,
    SpeedSummary,
    Stat,
    experience,
)
from rigbench.report._cells import Cell, Note, Section, Severity
from rigbench.report._fmt import fmt_tok_s_median
from rigbench.report._load import knee_text
from rigbench.report._speed import NM, NOT_COMPARABLE

__all__ = ["EXPERIENCE_KEY", "Answer", "answer_lines", "answer_sections", "answer_table_across", "answers", "short_answer"]

EXPERIENCE_KEY = (f"For a user: interactive = the first token within 1 s, then text faster than a person reads "
                  f"({READING_TOK_S:.1f} tok/s: 238 words a minute, Brysbaert 2019, at 4/3 tokens a word); waits = "
                  "the first token within 10 s; too slow = later (1 s keeps a flow of thought, 10 s holds "
                  "attention: Nielsen 1993; docs/metrics.md).")


@dataclass(frozen=True)
class Answer:
    """One kind of result of a run: its table, and the same figures as short lines for the summary."""

    section: Section
    lines: list[str] = field(default_factory=list)


def _wait(s: float | None) -> str:
    if s is None:
        return "–"
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.1f} s" if s < 100 else f"{s:.0f} s"


_LABELS: dict[str, tuple[str, Severity]] = {
    "interactive": ("interactive", "ok"), "waits": ("waits {wait}", "notable"),
    "too slow": ("too slow to wait for", "warn"), "slower than reading": ("slower than reading", "warn"),
    "not judged": ("not judged", "muted")}


def _speed(speed: SpeedSummary, trusted: bool, busy: bool) -> Answer | None:
    """`trusted`: the run's verdict; `busy`: a busy host kept by --allow-busy-host. Either way the figures are
    not the rig's alone, and what they mean for a user is not judged."""
    if not speed.rows and not speed.skipped:
        return None
    scenarios = list(dict.fromkeys(r.scenario for r in speed.rows))
    multi = any(len({r.concurrency for r in speed.rows if r.scenario == sc}) > 1 for sc in scenarios)
    rows: list[list[str | Cell]] = []
    notes: list[Note] = []
    lines: list[str] = []
    judged = trusted and not busy
    for sc in scenarios:
        levels = sorted((r for r in speed.rows if r.scenario == sc), key=lambda r: r.concurrency)
        lo, hi = levels[0], levels[-1]
        ex = experience(lo, trusted=judged)
        first = NM if lo.latency_not_measurable else NOT_COMPARABLE if lo.ttft_not_comparable else _wait(ex.ttft_s)
        decode = NM if lo.latency_not_measurable else "–" if ex.decode_tok_s is None \
            else f"{fmt_tok_s_median(lo.decode_tok_s)} tok/s"
        word, severity = _LABELS[ex.kind]
        label = Cell(word.format(wait=_wait(ex.ttft_s)), severity)
        shape = f"{lo.input_tokens_target}→{lo.output_tokens_target}"
        row: list[str | Cell] = [sc, *([label] if judged else []), shape, *([str(lo.concurrency)] if multi else []),
                                 first, decode]
        top = ""
        if multi:
            top = ("–" if hi is lo or hi.aggregate_tok_s is None else
                   f"{fmt_tok_s_median(hi.aggregate_tok_s)} ({fmt_tok_s_median(hi.decode_tok_s)} each)")
            row.append(top)
        rows.append(row)
        lines.append(f"{sc} {shape}" + (f" (c={lo.concurrency})" if multi else "") + f": first token {first}, "
                     f"then {decode}" + (f"; at c={hi.concurrency}: {top} tok/s" if multi and top != "–" else "")
                     + (f": {label.text}" if judged else ""))
        if ex.why_not and judged:
            notes.append(Note(f"{sc}: not judged: {ex.why_not}.", "muted"))
    for name, reason in speed.skipped.items():
        rows.append([name, *([Cell("skipped", "muted")] if judged else []), "", *([""] if multi else []),
                     "" if judged else "skipped", "", *([""] if multi else [])])
        notes.append(Note(f"{name}: skipped: {reason}", "muted"))
        lines.append(f"{name}: skipped: {reason}")
    user = ["for a user"] if judged else []
    tops = {max(r.concurrency for r in speed.rows if r.scenario == sc) for sc in scenarios}
    top_c = f"c={next(iter(tops))}" if len(tops) == 1 else "top c"
    head = ["scenario", *user, "in→out", *(["c"] if multi else []), "first token", "decode",
            *([f"{top_c}: tok/s all (each)"] if multi else [])]
    short = ["scenario", *user, "in→out", *(["c"] if multi else []), "first\ntoken", "decode",
             *([f"{top_c}: tok/s\nall (each)"] if multi else [])]
    lead = ("The median request of each scenario, measured by rigbench's client: the time to its first token, "
            "then its decode speed" + (" (at the lowest concurrency; the last column at the highest)." if multi
                                       else "."))
    if judged:
        notes.append(Note(EXPERIENCE_KEY, "muted"))
    else:
        why = ("the run is not trusted (the reasons are above)" if not trusted else
               "the host was busy while it measured (kept by --allow-busy-host), so these figures are not the "
               "rig's alone")
        notes.insert(0, Note(f"What these figures mean for a user is not judged: {why}.", "warn"))
    return Answer(Section("How fast", head, rows, notes, left_cols=3 if judged else 2, short_head=short, lead=lead),
                  lines)


def _pair_ms(s: Stat | None) -> str:
    if s is None or not s.n:
        return "–"
    p99 = s.p99 if s.p99 is not None else s.max
    return f"{s.median * 1e3:.0f} / {p99 * 1e3:.0f}"


def _offered(w: LoadWindowSummary) -> str:
    if w.mode == "saturation":
        return "all at once"
    if w.mode == "trace":
        return "trace" + (f" ({w.offered_rate_rps:.3g})" if w.offered_rate_rps is not None else "")
    return "–" if w.offered_rate_rps is None else f"{w.offered_rate_rps:.3g}"


def _load(load: LoadSummary) -> Answer:
    rows: list[list[str | Cell]] = []
    lines: list[str] = []
    for w in load.windows:
        lag = "–" if w.mode == "saturation" or w.send_lag_s is None or w.send_lag_s.p99 is None \
            else f"{w.send_lag_s.p99 * 1e3:.1f}"
        met = "–" if w.slo is None else Cell(f"{w.slo.fraction:.0%}",
                                             "ok" if w.slo.fraction >= load.attainment else "warn")
        # a window that did not reach a steady state says so beside its rate (analysis/_load.py, SteadyState)
        state = w.steady.state if w.steady is not None and w.steady.state != "steady" else None
        done = (f"{w.throughput_rps:.3g}" + (f" ({w.failed} failed)" if w.failed else "")
                + (f" ({state})" if state else ""))
        ttft, e2e = _pair_ms(w.ttft_response_s), _pair_ms(w.e2e_response_s)
        rows.append([w.window, _offered(w), done, ttft, e2e, lag if w.schedule_kept else Cell(lag, "warn"), met])
        offered = "everything at once" if w.mode == "saturation" else f"{_offered(w)} req/s offered"
        lines.append(f"{w.window} ({offered}): {done} done/s, TTFT p50 / p99 {ttft} ms, e2e {e2e} ms"
                     + (f", send lag p99 {lag} ms" if lag != "–" else "")
                     + (f", goodput {w.slo.goodput_rps:.3g} req/s ({w.slo.fraction:.0%} met the SLO)"
                        if w.slo is not None else ""))
    notes: list[Note] = []
    sat = load.saturation
    if sat is not None:
        notes.append(Note(f"Saturation: {sat.throughput_rps:.3g} requests/s, {sat.output_tok_s:,.0f} output tok/s "
                          "with every request sent at once (measured).", "notable"))
    if load.slo is not None:
        targets = ", ".join(f"{name} ≤ {v * 1e3:g} ms" for name, v in (("TTFT", load.slo.ttft_s),
                                                                       ("ITL", load.slo.itl_s),
                                                                       ("e2e", load.slo.e2e_s)) if v is not None)
        if len(load.rates) > 1:  # the knee as the bound it is (report/_load.py, analysis: RateBound)
            notes.append(Note(f"{knee_text(load)} SLO: {targets}.", "notable"))
        else:
            notes.append(Note(f"SLO: {targets}.", "muted"))
    notes.append(Note("done: completed requests per second of the window; TTFT and e2e: response time, from each "
                      "request's intended start (what a user queued behind the others waits), p50 / p99 in ms; "
                      "send lag: how late the client sent, p99 (measured on the client's clock).", "muted"))
    kinds = {w.mode for w in load.windows}
    title = ("Load: trace replay" if kinds == {"trace"} else
             "Load: sweep" if len(load.rates) > 1 or (sat is not None and load.rates) else
             "Load: saturation" if kinds == {"saturation"} else "Load: offered rate")
    sec = Section(title, ["window", "offered req/s", "done req/s", "TTFT ms p50 / p99", "e2e ms p50 / p99",
                          "send lag ms p99", "met SLO"], rows, notes, left_cols=2,
                  short_head=["window", "offered\nreq/s", "done\nreq/s", "TTFT ms\np50 / p99", "e2e ms\np50 / p99",
                              "send lag\nms p99", "met\nSLO"])
    return Answer(sec, [n.text for n in notes if n.severity == "notable"] + lines)


def _pct(p: Proportion) -> str:
    return f"{100 * p.p:.1f}% ± {100 * p.se:.1f} ({p.k}/{p.n})"


def _quality(q: QualitySummary) -> Answer | None:
    rows: list[list[str | Cell]] = []
    m = q.mmlu_pro
    if m is not None:
        above = (Cell(f"above chance ({m.chance:.0%})", "ok") if m.better_than_chance
                 else Cell(f"NOT above chance ({m.chance:.0%})", "warn"))
        rows.append([f"MMLU-Pro, {len(m.subjects)} subjects", _pct(m.overall), above])
    for p in q.packs:
        rows.append([f"task pack {p.pack}", _pct(p.overall),
                     f"{p.request_failures} failed requests" if p.request_failures else ""])
    for e in q.effort:
        rows.append([f"effort sweep ({e.pack})", f"{len(e.levels)} levels",
                     f"fastest to a correct answer: {e.fastest_to_correct}" if e.fastest_to_correct else ""])
    if not rows:
        return None
    sec = Section("How good", ["suite", "accuracy ± SE (right/asked)", "against"], rows,
                  [Note("± one standard error; details and per-subject scores below.", "muted")], left_cols=3)
    return Answer(sec, [_line(r) for r in rows])


def _agent(s: AgentSummary) -> Answer | None:
    if s.empty:
        return None
    c = s.verdict_counts
    rows: list[list[str | Cell]] = []
    if s.probes:
        ignored = c.get("silently_ignored", 0)
        rows.append(["conformance probes", f"{c.get('pass', 0)} pass, {c.get('fail', 0)} fail",
                     Cell(f"{ignored} silently ignored: {', '.join(s.silently_ignored)}", "error") if ignored
                     else "none silently ignored"])
    if s.tool_accuracy is not None:
        rows.append(["tool-call cases", _pct(s.tool_accuracy), ""])
    if s.bfcl_accuracy is not None:
        rows.append([f"BFCL ({s.bfcl_version})", _pct(s.bfcl_accuracy), ""])
    for t in s.tasks:
        rows.append([f"task {t.task}", f"pass^{t.k} {t.pass_hat_k:.2f} ({t.passed}/{t.trials})", ""])
    if not rows:
        return None
    sec = Section("How agent-ready", ["suite", "result", "note"], rows,
                  [Note("silently ignored: HTTP 200, no error, and the instruction had no effect (agent code breaks "
                        "without an exception). Details below.", "muted")], left_cols=3)
    return Answer(sec, [_line(r) for r in rows])


def _line(row: Sequence[str | Cell]) -> str:
    cells = [c.text if isinstance(c, Cell) else c for c in row]
    rest = ", ".join(c for c in cells[1:] if c)
    return f"{cells[0]}: {rest}" if rest else cells[0]


def answers(a: RunAnalysis) -> list[Answer]:
    """The run's answer, one per kind of result it holds; a run that measured nothing says so."""
    trusted = a.header.trust is not None and a.header.trust.trusted and a.status != "damaged"
    out: list[Answer | None] = [
        _speed(a.speed, trusted, busy=bool(getattr(a.sections.get("host"), "busy", False)))
        if a.speed is not None else None,
        _load(load) if (load := a.sections.get("load")) is not None else None,
        _quality(q) if (q := a.sections.get("quality")) is not None else None,
        _agent(ag) if (ag := a.sections.get("agent")) is not None else None]
    found = [x for x in out if x is not None]
    if not found:
        why = ("This run holds no speed, load, quality or agent result" + (
            ": it did not finish" if a.status in ("incomplete", "failed", "interrupted") else "") + ".")
        found.append(Answer(Section("Nothing measured", [], [], [Note(why, "warn")]), [why]))
    return found


def answer_sections(a: RunAnalysis) -> list[Section]:
    return [x.section for x in answers(a)]


def answer_lines(a: RunAnalysis) -> list[str]:
    """The answer as short lines: the end-of-report summary."""
    return [line for x in answers(a) for line in x.lines]


def answer_table_across(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> list[Section]:
    """Several runs (the HTML's headline): one section per kind, each run's rows under a run column. A note
    every run of the section has (a key) is given once; any other is prefixed with its run's name."""
    by_kind: dict[tuple[str, tuple[str, ...]], list[tuple[str, Section]]] = {}
    for name, a in zip(names, analyses, strict=True):
        for sec in answer_sections(a):
            by_kind.setdefault((sec.title, tuple(sec.head)), []).append((name, sec))
    out = []
    for (title, head), runs in by_kind.items():
        shared = set.intersection(*({n.text for n in sec.notes} for _, sec in runs))
        notes: list[Note] = []
        for name, sec in runs:
            notes += [Note(f"{name}: {n.text}", n.severity) for n in sec.notes if n.text not in shared]
        notes += [n for n in runs[0][1].notes if n.text in shared]
        first = runs[0][1]
        out.append(Section(title, ["run", *head], [[name, *r] for name, sec in runs for r in sec.rows], notes,
                           left_cols=first.left_cols + 1, lead=first.lead))
    return out


def short_answer(speed: SpeedSummary | None, load: LoadSummary | None, quality: QualitySummary | None,
                 agent: AgentSummary | None) -> str:
    """The run's answer in a few words, for `rigbench ls`: the first scenario's decode speed (median, lowest
    concurrency), a load run's saturation or highest rate, a quality score, the probes passed."""
    parts: list[str] = []
    if speed is not None and speed.rows:
        r = min((x for x in speed.rows if x.scenario == speed.rows[0].scenario), key=lambda x: x.concurrency)
        parts.append(f"{r.scenario} {fmt_tok_s_median(r.decode_tok_s)} tok/s")
    if load is not None and load.windows:
        sat = load.saturation
        top = max(load.rates, key=lambda w: w.offered_rate_rps or 0.0, default=None)
        if sat is not None:
            parts.append(f"saturation {sat.throughput_rps:.3g} req/s")
        elif top is not None:
            parts.append(f"{top.throughput_rps:.3g} of {top.offered_rate_rps or 0:.3g} req/s")
        else:
            w = load.windows[0]
            parts.append(f"{w.mode} {w.throughput_rps:.3g} req/s")
    if quality is not None and quality.mmlu_pro is not None:
        parts.append(f"MMLU-Pro {100 * quality.mmlu_pro.overall.p:.1f}%")
    elif quality is not None and quality.packs:
        p = quality.packs[0].overall
        parts.append(f"{quality.packs[0].pack} {p.k}/{p.n}")
    if agent is not None and agent.probes:
        parts.append(f"probes {agent.verdict_counts.get('pass', 0)}/{len(agent.probes)} pass")
    return "; ".join(parts[:2]) or "–"
