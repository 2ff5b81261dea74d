"""The few lines a terminal report ends on, so that the answer is on screen when the tables have
scrolled away: each run's verdict and headline figures, and where the files are."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from rigbench.analysis import LoadSummary, RunAnalysis
from rigbench.outside import visible
from rigbench.report._fmt import fmt_tok_s, fmt_ttft_ms
from rigbench.report._load import knee_short

__all__ = ["summary_terminal"]


def _headline(a: RunAnalysis) -> list[str]:
    """Per scenario at its lowest concurrency: decode tok/s and TTFT (medians over requests); in rate mode,
    the saturation throughput, the knee and each rate's goodput."""
    parts = _load_headline(a.sections.get("load"))
    if a.speed is None or not a.speed.rows:
        return parts or ["no speed results"]
    for sc in dict.fromkeys(r.scenario for r in a.speed.rows):
        r = min((r for r in a.speed.rows if r.scenario == sc), key=lambda r: r.concurrency)
        ttft = "n/c" if r.ttft_not_comparable else fmt_ttft_ms(r.ttft_s) + " ms"
        parts.append(f"{sc} (c={r.concurrency}): decode {fmt_tok_s(r.decode_tok_s)} tok/s, TTFT {ttft}")
    return parts


def _load_headline(load: LoadSummary | None) -> list[str]:
    if load is None:
        return []
    parts = []
    sat = load.saturation
    if sat is not None:
        parts.append(f"saturation: {sat.throughput_rps:.3g} req/s, {sat.output_tok_s:.0f} output tok/s")
    if load.slo is not None and len(load.rates) > 1:
        parts.append(f"knee (at least {load.attainment:.0%} met the SLO): {knee_short(load) or 'not bounded'}")
    for w in load.rates:
        ttft = "–" if w.ttft_response_s is None else f"{w.ttft_response_s.median * 1e3:.0f} ms"
        good = f", goodput {w.slo.goodput_rps:.3g} req/s ({w.slo.fraction:.0%} met the SLO)" if w.slo else ""
        parts.append(f"{w.offered_rate_rps or 0:.3g} req/s offered: {w.throughput_rps:.3g} done/s, "
                     f"TTFT p50 {ttft}{good}")
    return parts


def summary_terminal(console: Console, names: Sequence[str], analyses: Sequence[RunAnalysis],
                     files: Sequence[tuple[str, str]] = ()) -> None:
    """`files`: (what, path) of the reports written."""
    console.rule("Summary", align="left")
    for n, a in zip(names, analyses, strict=True):
        t = a.header.trust
        verdict, style = (("not assessed", "yellow") if t is None else ("trusted", "green") if t.trusted
                          else ("UNTRUSTED", "bold red"))
        reasons = sum(1 for w in a.warnings if w.startswith(("UNTRUSTED", "DAMAGED")))
        line = Text.assemble((visible(n), "bold"), f" ({a.status}): ", (verdict, style),
                             f" ({reasons} reason{'s' if reasons != 1 else ''}, listed above)" if reasons else "")
        console.print(line, highlight=False)
        for figures in _headline(a):
            console.print(Text("  " + visible(figures)), highlight=False)
        console.print(Text(f"  run directory: {visible(a.run_dir)}", style="dim"), highlight=False)
    for what, path in files:
        console.print(Text(f"{what}: {visible(path)}"), highlight=False)
