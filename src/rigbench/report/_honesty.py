"""Rendering of the honesty figures: sanity gate, output screen, preflight, roofline, KV capacity,
telemetry, timing cross-check, speculative speed-up and run comparisons. Terminal (rich) and
Markdown; no statistics are computed here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from rigbench.analysis import (
    Comparison,
    KVCapacity,
    Roofline,
    ScenarioTelemetry,
    SpeculationFit,
    SpeedupPrediction,
    TimingCrossCheck,
    session_neutral,
)
from rigbench.records import OutputScreen, PreflightReport, SanityVerdict, TrafficCheck
from rigbench.report._cells import (
    Cell,
    Note,
    Section,
    Severity,
    markdown_table,
    section_markdown,
    section_terminal,
)
from rigbench.report._fmt import fmt_margin, verdict_cell, verdict_sentence

__all__ = [
    "argv_diff",
    "comparison_markdown",
    "comparison_section",
    "comparison_terminal",
    "decode_efficiency_text",
    "kv_markdown",
    "kv_section",
    "kv_terminal",
    "preflight_markdown",
    "preflight_section",
    "preflight_terminal",
    "roofline_markdown",
    "roofline_section",
    "roofline_terminal",
    "sanity_markdown",
    "sanity_section",
    "sanity_terminal",
    "speculation_markdown",
    "speculation_section",
    "speculation_terminal",
    "speedup_markdown",
    "telemetry_markdown",
    "telemetry_sections",
    "telemetry_terminal",
    "traffic_text",
]


def _f(v: float | None, digits: int = 2, suffix: str = "") -> str:
    return "–" if v is None else f"{v:.{digits}f}{suffix}"


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1%}"


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return "\n".join(markdown_table(Section("", header, rows), align=False))


# -- sanity gate and output screen ----------------------------------------------------------------


def _gate_how(v: SanityVerdict) -> str:
    how = f"questions from seed {v.question_seed}, greedy" if v.question_seed is not None else f"greedy, seed {v.seed}"
    return how + (f", {v.elapsed_s:.1f} s" if v.elapsed_s is not None else "")


def _prefix_cache_text(c: TrafficCheck) -> str:
    if not c.prefix_cache:
        return "prefix cache: not reported by the server"
    prompt = sum(r.prompt_tokens for r in c.prefix_cache)
    cached = sum(r.cached_tokens for r in c.prefix_cache)
    hit = [r for r in c.prefix_cache if r.beyond_tokens > 0]
    sources = "/".join(sorted({r.source for r in c.prefix_cache}))
    return (f"prefix cache: {cached} of {prompt} prompt tokens served from it ({sources}), "
            + (f"beyond the prefix shared by design in {len(hit)} of {len(c.prefix_cache)} levels"
               if hit else "none beyond the prefix shared by design"))


def traffic_text(c: TrafficCheck) -> str:
    """One line on the checks of the measured traffic (honesty/_traffic.py, honesty/_prefix_cache.py)."""
    usage = {"tokenize": "recounted with /tokenize", "bytes_bound": "bounded by bytes", "none": "not reported"}
    return (f"traffic check: {c.duplicate_outputs} of {c.outputs} outputs identical to another prompt's; "
            f"usage {usage[c.usage_method]} in {c.usage_checked} ({c.usage_inflated} inflated); "
            f"server timings in {c.timings_checked} ({c.timings_inconsistent} contradict the client's clock); "
            + _prefix_cache_text(c))


def sanity_section(v: SanityVerdict, screen: OutputScreen | None = None) -> Section:
    """The gate's answer per question, why it failed (or what it missed within the bar), then the
    gibberish screen of the measured outputs."""
    ok = sum(1 for a in v.answers if a.passed)
    rows: list[list[str | Cell]] = [
        [a.question_id, a.language, Cell("pass", "ok") if a.passed else Cell("FAIL", "error"),
         " ".join(a.answer.split())[:60].rstrip()] for a in v.answers]
    notes = [Note(f"✗ {r}", "error") for r in v.reasons]
    notes += [Note(f"missed (within the bar): {r}", "warn") for r in v.notes]
    if screen is not None:
        notes.append(Note(f"gibberish screen: {screen.failed_outputs} of {screen.outputs} measured outputs fail, "
                          f"{screen.warned_outputs} repetitive (warning only)", "ok" if screen.trusted else "error"))
        notes += [Note(f"✗ {e}", "error", level=1) for e in screen.examples]
    return Section(f"Sanity gate: {'passed' if v.trusted else 'FAILED'}, {ok}/{len(v.answers)} known-answer "
                   f"questions ({_gate_how(v)})", ["question", "lang", "result", "answer"], rows, notes, left_cols=4,
                   title_severity="ok" if v.trusted else "error")


def sanity_terminal(v: SanityVerdict, screen: OutputScreen | None, console: Console) -> None:
    section_terminal(console, sanity_section(v, screen), notes_indent="")


def sanity_markdown(v: SanityVerdict, screen: OutputScreen | None = None, *, heading: str | None = None) -> str:
    return section_markdown(sanity_section(v, screen), heading=heading)


# -- preflight -----------------------------------------------------------------------------------

_PREFLIGHT_SEVERITY: dict[str, Severity | None] = {"error": "error", "warn": "warn", "info": None}


def preflight_section(r: PreflightReport) -> Section:
    """One row per configuration trap found (none: a note that says so)."""
    what = "" if r.command is None else (f" of a {r.command.engine} command line"
                                         + (f" (model {r.command.model})" if r.command.model else ""))
    rows: list[list[str | Cell]] = [
        [f.id, Cell(f.severity, sev) if (sev := _PREFLIGHT_SEVERITY[f.severity]) else f.severity, f.problem,
         f.evidence, f.fix] for f in r.findings]
    notes = [] if r.findings else [Note("no configuration traps found", "ok")]
    return Section(f"Preflight{what}", ["check", "severity", "problem", "evidence", "fix"], rows, notes, left_cols=5)


def preflight_terminal(r: PreflightReport, console: Console) -> None:
    """One card per finding: its problem, evidence and fix are paragraphs, too long for columns."""
    section_terminal(console, preflight_section(r), layout="cards", notes_indent="")


def preflight_markdown(r: PreflightReport, *, heading: str | None = None) -> str:
    return section_markdown(preflight_section(r), heading=heading)


# -- roofline and speed-up -----------------------------------------------------------------------


def _roofline_rows(r: Roofline) -> list[tuple[str, str]]:
    rows = [("weights", f"{r.weights_bytes / 1e9:.2f} GB"),
            ("memory bandwidth", f"{r.bandwidth_gb_s:g} GB/s ("
             + (r.bandwidth_source if r.bandwidth_basis == "given" or r.bandwidth_source.startswith(r.bandwidth_basis)
              else f"{r.bandwidth_basis}: {r.bandwidth_source}")
             + ")"),
            ("decode ceiling (1 stream)", f"{r.ceiling_tok_s:.2f} tok/s")]
    if r.measured_tok_s is not None:
        rows += [("measured", f"{r.measured_tok_s:.2f} tok/s"),
                 ("efficiency", _pct(r.efficiency)),
                 ("implied weight traffic", f"{_f(r.implied_bandwidth_gb_s, 1)} GB/s")]
    if r.finding:
        rows.append(("finding", r.finding))
    return rows


def decode_efficiency_text(rows: Sequence[tuple[str, int, float, float]]) -> str:
    """'scenario c=N: tok/s = P% of the ceiling' per speed row (scenario, concurrency, tok/s, efficiency)."""
    return "; ".join(f"{s} c={c}: {tok:.1f} tok/s = {eff:.0%}" for s, c, tok, eff in rows)


def roofline_section(r: Roofline) -> Section:
    return Section("Decode roofline", ["", ""], [list(x) for x in _roofline_rows(r)])


def roofline_terminal(r: Roofline, console: Console) -> None:
    section_terminal(console, roofline_section(r), layout="pairs")


def roofline_markdown(r: Roofline, *, heading: str | None = None) -> str:
    return section_markdown(roofline_section(r), heading=heading, align=False)


_SPEC_HEAD = ["scenario", "prefill share p", "acceptance L", "predicted, c = 0", "predicted, c", "measured"]
_SPEC_SHORT = ["scenario", "prefill\nshare p", "accept.\nL", "predicted\nc = 0", "predicted\nc", "measured"]


def _spec_intro(fit: SpeculationFit) -> str:
    return ((f"Draft cost c = {fit.draft_cost_ratio:.2f} target steps per verification step, calibrated on "
             f"{fit.calibrated_on} (*); the other rows are predictions. " if fit.calibrated_on else
             "Draft cost not calibrated (no decode figures): the predictions are free-drafter upper bounds. ")
            + "Model: 1 / (p + (1 − p)(1 + c) / L).")


def _spec_rows(fit: SpeculationFit) -> list[list[str]]:
    return [[p.scenario + (" (*)" if p.scenario == fit.calibrated_on else ""), _pct(p.prefill_share),
             _f(p.mean_acceptance_length), _f(f.predicted_speedup, 2, "×"), _f(p.predicted_speedup, 2, "×"),
             _f(p.measured_speedup, 2, "×")] for p, f in zip(fit.predictions, fit.free_drafter, strict=True)]


def speculation_section(run_id: str, fit: SpeculationFit) -> Section:
    """Predicted vs measured speed-up, with and without the calibrated draft cost. A `run_id` that
    carries a synthetic-acceptance mark gets a red title."""
    return Section(f"Speculative decoding: predicted vs measured speed-up ({run_id})", _SPEC_HEAD, _spec_rows(fit),
                   [Note(_spec_intro(fit))], short_head=_SPEC_SHORT,
                   title_severity="error" if "[synthetic" in run_id else None)


def speculation_markdown(run_id: str, fit: SpeculationFit) -> str:
    return section_markdown(speculation_section(run_id, fit), heading=None)


def speculation_terminal(run_id: str, fit: SpeculationFit, console: Console) -> None:
    section_terminal(console, speculation_section(run_id, fit), layout="simple", notes_indent="")


def speedup_markdown(preds: Sequence[SpeedupPrediction]) -> str:
    rows = [[p.scenario, _pct(p.prefill_share), _f(p.mean_acceptance_length), _f(p.predicted_speedup, 2, "×"),
             _f(p.measured_speedup, 2, "×")] for p in preds]
    return ("**Speculative decoding: predicted vs measured speed-up** "
            "(1 / (prefill share + decode share / acceptance length))\n\n"
            + _md_table(["scenario", "prefill share", "accept. length", "predicted", "measured"], rows))


# -- KV capacity ---------------------------------------------------------------------------------


def _kv_rows(c: KVCapacity) -> list[tuple[str, str]]:
    if c.accounting == "server pool":  # no architecture: the pool alone
        return [(f"server-reported pool ({c.server_pool_source or 'server'})", f"{c.tokens:,} tokens"),
                (f"sessions at {c.context_tokens:,} tokens", f"{c.sessions:.2f}")]
    rows = [("budget", f"{c.budget_bytes / 1024**3:.2f} GiB"), ("KV dtype", c.kv_dtype),
            ("bytes / token (all layers)", f"{c.bytes_per_token_all_layers:,.0f}"),
            (f"bytes / session at {c.context_tokens:,} tokens", f"{c.bytes_per_session:,.0f}"),
            (f"sessions at {c.context_tokens:,} tokens", f"{c.sessions:.2f}"),
            ("pool (tokens)", f"{c.tokens:,}"),
            ("pool if every layer were global", f"{c.tokens_without_windows:,}")]
    if c.blocks_total is not None and c.blocks_per_session is not None:  # an engine's block accounting
        rows.append(("accounting", f"{c.accounting_label or c.accounting} of {c.block_size} tokens: "
                                   f"{c.blocks_total:,} in the pool, {c.blocks_per_session:,} per session"))
    if c.server_pool_tokens is not None:
        rows.append((f"server-reported pool ({c.server_pool_source or 'server'})", f"{c.server_pool_tokens:,}"))
        if c.server_sessions is not None:
            rows.append(("server pool / context (sessions)", f"{c.server_sessions:.2f}"))
        if c.prediction_error is not None:
            rows.append(("estimate vs server pool", f"{c.prediction_error:+.2%}"))
    return rows


def kv_section(c: KVCapacity) -> Section:
    return Section("KV-cache capacity (estimate)", ["", ""], [list(x) for x in _kv_rows(c)])


def kv_terminal(c: KVCapacity, console: Console) -> None:
    section_terminal(console, kv_section(c), layout="pairs")


def kv_markdown(c: KVCapacity) -> str:
    return section_markdown(kv_section(c), heading=None, align=False)


# -- telemetry and timing cross-check ------------------------------------------------------------

_TEL_HEADER = ["scenario", "c", "samples (Hz)", "accept. length", "accept. rate", "KV peak", "running peak",
               "waiting peak"]


def _tel_rows(ts: Sequence[ScenarioTelemetry]) -> list[list[str]]:
    return [[t.scenario, str(t.concurrency),
             t.unavailable or f"{t.samples} ({_f(t.sample_rate_hz, 1)})",
             _f(t.mean_acceptance_length), _pct(t.acceptance_rate), _pct(t.kv_usage_peak),
             _f(t.requests_running_peak, 0), _f(t.requests_waiting_peak, 0)] for t in ts]


def _cc_rows(cs: Sequence[TimingCrossCheck]) -> list[list[str]]:
    return [[c.scenario, str(c.concurrency), str(c.requests), _f(c.client_decode_tok_s, 1),
             _f(c.server_decode_tok_s, 1), _f(c.ratio, 3),
             "–" if c.ttft_minus_prompt_s is None else f"{c.ttft_minus_prompt_s * 1000:.1f} ms",
             {True: "yes", False: "NO", None: "–"}[c.agrees]] for c in cs]


_CC_HEADER = ["scenario", "c", "n", "client decode tok/s", "server decode tok/s", "ratio", "TTFT − prompt",
              "agree"]


_TEL_SHORT = ["scenario", "c", "samples\n(Hz)", "accept\nlen", "accept\nrate", "KV\npeak", "run\npeak",
              "wait\npeak"]
_TEL_KEY = ("accept len: mean acceptance length (tokens per target pass, bonus included); accept rate: accepted / "
            "drafted tokens; KV, run, wait peak: highest KV-cache usage, requests running, requests waiting over "
            "the scenario's scrapes.")
_CC_SHORT = ["scenario", "c", "n", "client\ntok/s", "server\ntok/s", "client/\nserver", "TTFT −\nprompt",
             "agree"]
_CC_KEY = ("Decode tok/s per request, median: measured by rigbench (client) and from llama.cpp's `timings` "
           "(server); agree: within ±10%. TTFT − prompt: time outside the server's prompt processing.")


def telemetry_sections(ts: Sequence[ScenarioTelemetry], checks: Sequence[TimingCrossCheck]) -> list[Section]:
    """Server telemetry per scenario, then the client-vs-server timing check (each only when there is data)."""
    out = []
    if ts:
        out.append(Section("Server telemetry", _TEL_HEADER, _tel_rows(ts), short_head=_TEL_SHORT, key=_TEL_KEY))
    if checks:
        out.append(Section("Client vs server timings", _CC_HEADER, _cc_rows(checks), short_head=_CC_SHORT,
                           short_title="Client vs server timings (llama.cpp `timings`)", key=_CC_KEY))
    return out


def telemetry_terminal(ts: Sequence[ScenarioTelemetry], checks: Sequence[TimingCrossCheck],
                       console: Console) -> None:
    """Short two-line headers with a key below, scenario names never cut: readable at 80 columns."""
    for sec in telemetry_sections(ts, checks):
        section_terminal(console, sec, layout="simple")


def telemetry_markdown(ts: Sequence[ScenarioTelemetry], checks: Sequence[TimingCrossCheck],
                       *, heading: str | None = None) -> str:
    return "\n\n".join(section_markdown(sec, heading=heading, align=False) for sec in telemetry_sections(ts, checks))


# -- comparisons ---------------------------------------------------------------------------------


_VERDICT: dict[str, Severity] = {"differs": "notable", "same": "ok", "inconclusive": "warn"}


def _cmp_row(r: Any, *, one_c: bool, synthetic: bool) -> list[str | Cell]:
    res = r.result
    ratio = "–" if res.ratio is None else (f"{res.ratio:.2f}×±{res.ratio_err:.2f}" if res.ratio_err is not None
                                           else f"{res.ratio:.2f}×")
    p = "–" if res.p is None else "<0.001" if res.p < 0.001 else f"{res.p:.3f}"
    return [r.scenario, *([] if one_c else [str(r.concurrency)]), f"{r.baseline.n}/{r.other.n}",
            _ms(r.baseline.mean, r.baseline.std), _ms(r.other.mean, r.other.std),
            Cell(ratio, "error") if synthetic else ratio, p,
            Cell(verdict_cell(res.verdict, res.margin, None), _VERDICT[res.verdict])]


def _ms(mean: float, sd: float) -> str:
    """Mean ± sd to about three significant digits: 129±7, 65.4±0.4, 0.074±0.002."""
    d = 0 if abs(mean) >= 100 else 1 if abs(mean) >= 10 else 2 if abs(mean) >= 1 else 3
    return f"{mean:.{d}f}±{sd:.{d}f}"


_CMP_HEAD = ["scenario", "c", "n A/B", "A mean±sd", "B mean±sd", "ratio B/A", "Welch p", "verdict"]
_CMP_SHORT = ["scenario", "c", "n\nA/B", "A\nmean±sd", "B\nmean±sd", "ratio\nB/A", "Welch\np", "verdict"]
_RATIO = 5  # the ratio column of _CMP_HEAD


def _names(c: Comparison, labels: Mapping[str, str] | None) -> tuple[str, str]:
    labels = labels or {}
    return labels.get(c.baseline_run, c.baseline_run), labels.get(c.other_run, c.other_run)


def argv_diff(a: list[str], b: list[str]) -> str:
    """What the other command line adds (+) and drops (−), not both lines in full."""
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            out.append("− " + " ".join(a[i1:i2]))
        if op in ("insert", "replace"):
            out.append("+ " + " ".join(b[j1:j2]))
    return "; ".join(out)


def _difference(d: Any) -> str:
    if d.field == "argv" and isinstance(d.baseline, list) and isinstance(d.other, list):
        # the ports the servers happened to get are no difference between the rigs
        return f"argv: {argv_diff(session_neutral(d.baseline), session_neutral(d.other))}"
    return f"{d.field}: {d.baseline!r} → {d.other!r}"


def comparison_section(c: Comparison, labels: Mapping[str, str] | None = None,
                       synthetic: Mapping[str, str] | None = None) -> Section:
    """One metric of B against A, scenario by scenario: means ± sd, the ratio with its error, Welch's p
    and the verdict; under it what each run is, what differs in their fingerprints, and what only
    one run has. `labels`: run directory name -> short rig label. `synthetic`: run directory name ->
    the synthetic-acceptance note, shown in red with every ratio of that run. The concurrency column
    is left out when every row is at concurrency 1 (the title says so)."""
    a, b = _names(c, labels)
    note = (synthetic or {}).get(c.other_run)
    one_c = all(r.concurrency == 1 for r in c.rows)
    keep = [i for i in range(len(_CMP_HEAD)) if not (one_c and i == 1)]
    head = [_CMP_HEAD[i].replace("ratio", "SYNTHETIC ratio") if note and i == _RATIO else _CMP_HEAD[i] for i in keep]
    short = [_CMP_SHORT[i].replace("ratio", "SYNTH.") if note and i == _RATIO else _CMP_SHORT[i] for i in keep]
    notes = [Note(f"{b}: {note}", "error")] if note else []
    notes.append(Note(f"A = {c.baseline_run} (data {c.baseline_source_data_id}), "
                      f"B = {c.other_run} (data {c.other_source_data_id})", "muted"))
    if c.differences:
        notes.append(Note("fingerprint differences" + (" (compared anyway: --allow-mismatch)" if c.mismatch_allowed
                                                       else "") + ":", "error" if c.mismatch_allowed else None))
        notes += [Note(_difference(d) + ("" if d.matters else " (expected)"), level=1) for d in c.differences]
    if c.missing:
        notes.append(Note(f"in one run only: {', '.join(c.missing)}"))
    if c.other_shape:
        notes.append(Note(f"not compared, another workload in each run: {', '.join(c.other_shape)}", "warn"))
    notes += _verdict_key(c, one_c=one_c)
    return Section(f"{c.metric}: B = {b} vs A = {a} (Welch + TOST {fmt_margin(c.margin)}, α = {c.alpha}"
                   + (", concurrency 1)" if one_c else ")"), head,
                   [_cmp_row(r, one_c=one_c, synthetic=note is not None) for r in c.rows], notes, short_head=short)


def _verdict_key(c: Comparison, *, one_c: bool) -> list[Note]:
    """What the verdicts mean, then each inconclusive row spelled out: the repetitions that would decide."""
    m = fmt_margin(c.margin)
    out = [Note(f"same {m}: two one-sided tests put B/A within {1 - c.margin:g}–{1 + c.margin:g}; differs: "
                f"Welch p < {c.alpha:g}; inconclusive: neither decides (repetitions that would: 80% power at the "
                f"observed spread).", "muted")]
    for r in c.rows:
        if r.result.verdict == "inconclusive":
            where = r.scenario + ("" if one_c else f" c={r.concurrency}")
            out.append(Note(f"{where}: " + verdict_sentence("inconclusive", c.margin, r.result.needed_n,
                                                           reason=r.result.reason), level=1))
    return out


def comparison_terminal(cs: Sequence[Comparison], console: Console, labels: Mapping[str, str] | None = None,
                        synthetic: Mapping[str, str] | None = None) -> None:
    """`comparison_section` per comparison (its arguments)."""
    for c in cs:
        section_terminal(console, comparison_section(c, labels, synthetic), layout="simple", notes_indent="")


def comparison_markdown(cs: Sequence[Comparison], labels: Mapping[str, str] | None = None,
                        synthetic: Mapping[str, str] | None = None) -> str:
    return "\n\n".join(section_markdown(comparison_section(c, labels, synthetic), heading=None) for c in cs)
