"""Rendering of the honesty figures: sanity gate, output screen, preflight, roofline, KV capacity,
telemetry, timing cross-check, speculative speed-up and run comparisons. Terminal (rich) and
Markdown; no statistics are computed here.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from rigbench.analysis._compare import Comparison
from rigbench.analysis._kvcache import KVCapacity
from rigbench.analysis._roofline import Roofline, SpeedupPrediction
from rigbench.analysis._speculation import SpeculationFit
from rigbench.analysis._telemetry import ScenarioTelemetry, TimingCrossCheck
from rigbench.rig._preflight import PreflightReport
from rigbench.rig._sanity import OutputScreen, SanityVerdict

__all__ = [
    "comparison_markdown",
    "comparison_terminal",
    "kv_markdown",
    "kv_terminal",
    "preflight_markdown",
    "preflight_terminal",
    "roofline_markdown",
    "roofline_terminal",
    "sanity_markdown",
    "sanity_terminal",
    "speculation_markdown",
    "speedup_markdown",
    "telemetry_markdown",
    "telemetry_terminal",
]


def _f(v: float | None, digits: int = 2, suffix: str = "") -> str:
    return "–" if v is None else f"{v:.{digits}f}{suffix}"


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1%}"


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    esc = [[c.replace("|", "\\|") for c in r] for r in rows]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in esc]
    return "\n".join(lines)


# -- sanity gate and output screen ----------------------------------------------------------------


def sanity_terminal(v: SanityVerdict, screen: OutputScreen | None, console: Console) -> None:
    ok = sum(1 for a in v.answers if a.passed)
    style = "green" if v.trusted else "bold red"
    console.print(f"[{style}]sanity gate: {ok}/{len(v.answers)} known-answer questions passed "
                  f"(greedy, seed {v.seed})[/]")
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
           f"({sum(1 for a in v.answers if a.passed)}/{len(v.answers)}, greedy, seed {v.seed})", "",
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
            ("memory bandwidth", f"{r.bandwidth_gb_s:g} GB/s ({r.bandwidth_source})"),
            ("decode ceiling (1 stream)", f"{r.ceiling_tok_s:.2f} tok/s")]
    if r.measured_tok_s is not None:
        rows += [("measured", f"{r.measured_tok_s:.2f} tok/s"),
                 ("efficiency", _pct(r.efficiency)),
                 ("implied weight traffic", f"{_f(r.implied_bandwidth_gb_s, 1)} GB/s")]
    return rows


def roofline_terminal(r: Roofline, console: Console) -> None:
    t = Table(title="decode roofline", show_header=False)
    for k, v in _roofline_rows(r):
        t.add_row(k, v)
    console.print(t)


def roofline_markdown(r: Roofline) -> str:
    return "**Decode roofline**\n\n" + _md_table(["", ""], [list(x) for x in _roofline_rows(r)])


def speculation_markdown(run_id: str, fit: SpeculationFit) -> str:
    """Predicted vs measured speed-up, with and without the calibrated draft cost."""
    head = (f"**Speculative decoding: predicted vs measured speed-up ({run_id})**\n\n"
            + (f"Draft cost c = {fit.draft_cost_ratio:.2f} target steps per verification step, calibrated on "
               f"{fit.calibrated_on}; the other rows are predictions. " if fit.calibrated_on else
               "Draft cost not calibrated (no decode figures): the predictions are free-drafter upper bounds. ")
            + "Model: 1 / (p + (1 − p)(1 + c) / L).\n\n")
    rows = [[p.scenario + (" (calibration)" if p.scenario == fit.calibrated_on else ""), _pct(p.prefill_share),
             _f(p.mean_acceptance_length), _f(f.predicted_speedup, 2, "×"), _f(p.predicted_speedup, 2, "×"),
             _f(p.measured_speedup, 2, "×")] for p, f in zip(fit.predictions, fit.free_drafter, strict=True)]
    return head + _md_table(["scenario", "prefill share p", "acceptance L", "predicted, c = 0", "predicted, c",
                             "measured"], rows)


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


def kv_terminal(c: KVCapacity, console: Console) -> None:
    t = Table(title="KV-cache capacity (estimate)", show_header=False)
    for k, v in _kv_rows(c):
        t.add_row(k, v)
    console.print(t)


def kv_markdown(c: KVCapacity) -> str:
    return "**KV-cache capacity (estimate)**\n\n" + _md_table(["", ""], [list(x) for x in _kv_rows(c)])


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


def telemetry_terminal(ts: Sequence[ScenarioTelemetry], checks: Sequence[TimingCrossCheck],
                       console: Console) -> None:
    if ts:
        t = Table(title="server telemetry")
        for h in _TEL_HEADER:
            t.add_column(h)
        for r in _tel_rows(ts):
            t.add_row(*r)
        console.print(t)
    if checks:
        t = Table(title="client vs server timings (llama.cpp `timings`)")
        for h in _CC_HEADER:
            t.add_column(h)
        for r in _cc_rows(checks):
            t.add_row(*r)
        console.print(t)


def telemetry_markdown(ts: Sequence[ScenarioTelemetry], checks: Sequence[TimingCrossCheck]) -> str:
    parts = []
    if ts:
        parts.append("**Server telemetry**\n\n" + _md_table(_TEL_HEADER, _tel_rows(ts)))
    if checks:
        parts.append("**Client vs server timings**\n\n" + _md_table(_CC_HEADER, _cc_rows(checks)))
    return "\n\n".join(parts)


# -- comparisons ---------------------------------------------------------------------------------


def _cmp_rows(c: Comparison) -> list[list[str]]:
    rows = []
    for r in c.rows:
        res = r.result
        ratio = "–" if res.ratio is None else (f"{res.ratio:.2f}× ± {res.ratio_err:.2f}" if res.ratio_err is not None
                                               else f"{res.ratio:.2f}×")
        test = "–" if res.t is None else f"t = {res.t:.2f}, p = {res.p:.3g}" if res.p is not None else f"t = {res.t:.2f}"
        rows.append([r.scenario, str(r.concurrency), f"{r.baseline.mean:.2f} ± {r.baseline.std:.2f} (n={r.baseline.n})",
                     f"{r.other.mean:.2f} ± {r.other.std:.2f} (n={r.other.n})", ratio, test, res.verdict])
    return rows


def _cmp_header(c: Comparison) -> list[str]:
    return ["scenario", "c", f"{c.baseline_run} {c.metric}", f"{c.other_run} {c.metric}", "ratio", "Welch t-test",
            "verdict"]


def comparison_terminal(cs: Sequence[Comparison], console: Console) -> None:
    for c in cs:
        t = Table(title=f"{c.other_run} vs {c.baseline_run} (mean ± sd, α = {c.alpha})")
        for h in _cmp_header(c):
            t.add_column(h)
        for r in _cmp_rows(c):
            style = {"differs": "bold", "reproduces": "green", "insufficient": "yellow"}[r[-1]]
            t.add_row(*r[:-1], f"[{style}]{r[-1]}[/]")
        console.print(t)
        if c.differences:
            console.print("  fingerprint differences" + (" [red](compared anyway: --allow-mismatch)[/]"
                                                          if c.mismatch_allowed else "") + ":")
            for d in c.differences:
                console.print(f"    {d.field}: {d.baseline!r} → {d.other!r}" + ("" if d.matters else " (expected)"),
                              highlight=False)
        if c.missing:
            console.print(f"  in one run only: {', '.join(c.missing)}")


def comparison_markdown(cs: Sequence[Comparison]) -> str:
    parts = []
    for c in cs:
        parts.append(f"**{c.other_run} vs {c.baseline_run}** (mean ± sd; Welch t-test, α = {c.alpha}; "
                     f"data {c.baseline_source_data_id} / {c.other_source_data_id})\n\n"
                     + _md_table(_cmp_header(c), _cmp_rows(c)))
        if c.differences:
            parts.append("\n".join(f"- `{d.field}`: {d.baseline!r} → {d.other!r}"
                                   + ("" if d.matters else " (expected)") for d in c.differences))
    return "\n\n".join(parts)
