"""Rendering of the honesty figures: sanity gate, output screen, preflight, roofline, KV capacity,
telemetry, timing cross-check, speculative speed-up and run comparisons. Terminal (rich) and
Markdown; no statistics are computed here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rigbench.analysis._compare import Comparison
from rigbench.analysis._kvcache import KVCapacity
from rigbench.analysis._roofline import Roofline, SpeedupPrediction
from rigbench.analysis._speculation import SpeculationFit
from rigbench.analysis._telemetry import ScenarioTelemetry, TimingCrossCheck
from rigbench.records import OutputScreen, PreflightReport, SanityVerdict
from rigbench.report._cells import Section, markdown_table, section_markdown, section_terminal
from rigbench.rig._traffic import TrafficCheck

__all__ = [
    "comparison_markdown",
    "comparison_terminal",
    "decode_efficiency_text",
    "kv_markdown",
    "kv_section",
    "kv_terminal",
    "preflight_markdown",
    "preflight_terminal",
    "roofline_markdown",
    "roofline_section",
    "roofline_terminal",
    "sanity_markdown",
    "sanity_terminal",
    "speculation_markdown",
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


def traffic_text(c: TrafficCheck) -> str:
    """One line on the checks of the measured traffic (rig/_traffic.py)."""
    usage = {"tokenize": "recounted with /tokenize", "bytes_bound": "bounded by bytes", "none": "not reported"}
    return (f"traffic check: {c.duplicate_outputs} of {c.outputs} outputs identical to another prompt's; "
            f"usage {usage[c.usage_method]} in {c.usage_checked} ({c.usage_inflated} inflated); "
            f"server timings in {c.timings_checked} ({c.timings_inconsistent} contradict the client's clock)")


def sanity_terminal(v: SanityVerdict, screen: OutputScreen | None, console: Console) -> None:
    ok = sum(1 for a in v.answers if a.passed)
    style = "green" if v.trusted else "bold red"
    console.print(f"[{style}]sanity gate: {ok}/{len(v.answers)} known-answer questions passed "
                  f"({_gate_how(v)})[/]")
    for r in v.reasons:
        console.print(f"  [red]✗[/] {r}", highlight=False)
    for r in v.notes:
        console.print(f"  [yellow]missed (within the bar)[/] {r}", highlight=False)
    if screen is not None:
        style = "green" if screen.trusted else "bold red"
        console.print(f"[{style}]gibberish screen: {screen.failed_outputs} of {screen.outputs} outputs fail, "
                      f"{screen.warned_outputs} repetitive (warning only)[/]")
        for e in screen.examples:
            console.print(f"  [red]✗[/] {e}", highlight=False)


def sanity_markdown(v: SanityVerdict, screen: OutputScreen | None = None) -> str:
    rows = [[a.question_id, a.language, "pass" if a.passed else "FAIL", " ".join(a.answer.split())[:60]]
            for a in v.answers]
    out = [f"**Sanity gate:** {'passed' if v.trusted else 'FAILED'} "
           f"({sum(1 for a in v.answers if a.passed)}/{len(v.answers)}, {_gate_how(v)})", "",
           _md_table(["question", "lang", "result", "answer"], rows)]
    if screen is not None:
        out += ["", f"**Gibberish screen:** {screen.failed_outputs} of {screen.outputs} measured outputs fail; "
                    f"{screen.warned_outputs} repetitive (warning only)."]
        out += [f"- `{e}`" for e in screen.examples]
    return "\n".join(out)


# -- preflight -----------------------------------------------------------------------------------

_SEV_STYLE = {"error": "bold red", "warn": "yellow", "info": "cyan"}


def preflight_terminal(r: PreflightReport, console: Console) -> None:
    if r.command is not None:
        console.print(f"preflight of a {r.command.engine} command line"
                      + (f" (model {r.command.model})" if r.command.model else ""))
    if not r.findings:
        console.print("[green]no configuration traps found[/]")
        return
    for f in r.findings:
        console.print(f"[{_SEV_STYLE[f.severity]}]{f.severity}[/] [bold]{f.id}[/]: {f.problem}", highlight=False)
        console.print(f"    evidence: {f.evidence}", highlight=False)
        console.print(f"    fix:      {f.fix}", highlight=False)


def preflight_markdown(r: PreflightReport) -> str:
    if not r.findings:
        return "**Preflight:** no configuration traps found."
    rows = [[f.severity, f.id, f.problem, f.evidence, f.fix] for f in r.findings]
    return "**Preflight**\n\n" + _md_table(["severity", "check", "problem", "evidence", "fix"], rows)


# -- roofline and speed-up -----------------------------------------------------------------------


def _roofline_rows(r: Roofline) -> list[tuple[str, str]]:
    rows = [("weights", f"{r.weights_bytes / 1e9:.2f} GB"),
            ("memory bandwidth", f"{r.bandwidth_gb_s:g} GB/s ("
             + (r.bandwidth_source if r.bandwidth_basis == "given" else f"{r.bandwidth_basis}: {r.bandwidth_source}")
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
    return Section("Decode roofline", ["", ""], [list(x) for x in _roofline_rows(r)], short_title="decode roofline")


def roofline_terminal(r: Roofline, console: Console) -> None:
    section_terminal(console, roofline_section(r), layout="pairs")


def roofline_markdown(r: Roofline) -> str:
    return section_markdown(roofline_section(r), heading=None, align=False)


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


def speculation_markdown(run_id: str, fit: SpeculationFit) -> str:
    """Predicted vs measured speed-up, with and without the calibrated draft cost."""
    return (f"**Speculative decoding: predicted vs measured speed-up ({run_id})**\n\n{_spec_intro(fit)}\n\n"
            + _md_table(_SPEC_HEAD, _spec_rows(fit)))


def speculation_terminal(run_id: str, fit: SpeculationFit, console: Console) -> None:
    t = Table(title=f"Speculative decoding: predicted vs measured speed-up ({escape(run_id)})", title_justify="left",
              title_style="bold red" if "[synthetic" in run_id else None,
              box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False, caption=_spec_intro(fit), caption_justify="left")
    for i, h in enumerate(_SPEC_SHORT):
        t.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for r in _spec_rows(fit):
        t.add_row(*r)
    console.print(t)


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
    if c.accounting == "vllm":
        rows.append(("accounting", f"vLLM blocks of {c.block_size} tokens: {c.blocks_total:,} in the pool, "
                                   f"{c.blocks_per_session:,} per session"))
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


def telemetry_markdown(ts: Sequence[ScenarioTelemetry], checks: Sequence[TimingCrossCheck]) -> str:
    return "\n\n".join(section_markdown(sec, heading=None, align=False) for sec in telemetry_sections(ts, checks))


# -- comparisons ---------------------------------------------------------------------------------


def _cmp_rows(c: Comparison, *, with_t: bool = False) -> list[list[str]]:
    rows = []
    for r in c.rows:
        res = r.result
        ratio = "–" if res.ratio is None else (f"{res.ratio:.2f}×±{res.ratio_err:.2f}" if res.ratio_err is not None
                                               else f"{res.ratio:.2f}×")
        p = "–" if res.p is None else "<0.001" if res.p < 0.001 else f"{res.p:.3f}"
        test = f"t = {res.t:.2f}, p = {res.p:.3g}" if with_t and res.t is not None and res.p is not None else p
        rows.append([r.scenario, str(r.concurrency), f"{r.baseline.n}/{r.other.n}", _ms(r.baseline.mean, r.baseline.std),
                     _ms(r.other.mean, r.other.std), ratio, test, res.verdict])
    return rows


def _ms(mean: float, sd: float) -> str:
    """Mean ± sd to about three significant digits: 129±7, 65.4±0.4, 0.074±0.002."""
    d = 0 if abs(mean) >= 100 else 1 if abs(mean) >= 10 else 2 if abs(mean) >= 1 else 3
    return f"{mean:.{d}f}±{sd:.{d}f}"


_CMP_HEAD = ["scenario", "c", "n A/B", "A mean±sd", "B mean±sd", "ratio B/A", "Welch p", "verdict"]
_CMP_SHORT = ["scenario", "c", "n\nA/B", "A\nmean±sd", "B\nmean±sd", "ratio\nB/A", "Welch\np", "verdict"]


def _names(c: Comparison, labels: Mapping[str, str] | None) -> tuple[str, str]:
    labels = labels or {}
    return labels.get(c.baseline_run, c.baseline_run), labels.get(c.other_run, c.other_run)


def _argv_diff(a: list[str], b: list[str]) -> str:
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
        return f"argv: {_argv_diff(d.baseline, d.other)}"
    return f"{d.field}: {d.baseline!r} → {d.other!r}"


def comparison_terminal(cs: Sequence[Comparison], console: Console, labels: Mapping[str, str] | None = None,
                        synthetic: Mapping[str, str] | None = None) -> None:
    """`labels`: run directory name -> short rig label. `synthetic`: run directory name -> the red
    synthetic-acceptance note, printed with every ratio of that run."""
    for c in cs:
        a, b = (escape(x) for x in _names(c, labels))
        note = (synthetic or {}).get(c.other_run)
        one_c = all(r.concurrency == 1 for r in c.rows)
        t = Table(title=f"{c.metric}: B = {b} vs A = {a} (Welch t-test, α = {c.alpha}"
                  + (", concurrency 1)" if one_c else ")"), title_justify="left",
                  box=box.SIMPLE_HEAD, padding=(0, 1), collapse_padding=True, pad_edge=False)
        keep = [i for i in range(len(_CMP_SHORT)) if not (one_c and i == 1)]
        for i in keep:
            h = _CMP_SHORT[i]
            t.add_column(h.replace("ratio", "SYNTH.") if note and i == 5 else h, justify="left" if i == 0 else "right",
                         no_wrap=True, header_style="bold red" if note and i == 5 else "bold")
        for r in _cmp_rows(c):
            style = {"differs": "bold", "reproduces": "green", "insufficient": "yellow"}[r[-1]]
            cells = [*r[:5], f"[bold red]{r[5]}[/]" if note else r[5], r[6], f"[{style}]{r[-1]}[/]"]
            t.add_row(*(cells[i] for i in keep))
        console.print(t)
        if note:
            console.print(f"[bold red]{b}: {note}[/]", highlight=False)
        console.print(f"[dim]A = {c.baseline_run}, B = {c.other_run}[/]", highlight=False)
        if c.differences:
            console.print("fingerprint differences" + (" [red](compared anyway: --allow-mismatch)[/]"
                                                        if c.mismatch_allowed else "") + ":")
            for d in c.differences:
                console.print(f"  {_difference(d)}" + ("" if d.matters else " (expected)"), highlight=False)
        if c.missing:
            console.print(f"in one run only: {', '.join(c.missing)}")


def comparison_markdown(cs: Sequence[Comparison], labels: Mapping[str, str] | None = None,
                        synthetic: Mapping[str, str] | None = None) -> str:
    parts = []
    for c in cs:
        a, b = _names(c, labels)
        note = (synthetic or {}).get(c.other_run)
        rows = [[*r[:5], f"**{r[5]} synthetic**" if note else r[5], *r[6:]] for r in _cmp_rows(c, with_t=True)]
        head = [*_CMP_HEAD[:6], "Welch t-test", "verdict"]
        parts.append(f"**{c.metric}: B = {b} vs A = {a}** (mean ± sd; Welch t-test, α = {c.alpha}; A = "
                     f"`{c.baseline_run}`, data {c.baseline_source_data_id}; B = `{c.other_run}`, data "
                     f"{c.other_source_data_id})\n\n" + _md_table(head, rows)
                     + (f"\n\n**{b}: {note}**" if note else ""))
        if c.differences:
            parts.append("\n".join(f"- `{_difference(d)}`" + ("" if d.matters else " (expected)")
                                   for d in c.differences))
    return "\n\n".join(parts)
