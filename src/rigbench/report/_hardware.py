"""What the hardware and the serving setup allow, drawn: the decode roofline, the speculative speed-up (fitted and
predicted) and the KV-cache capacity. Terminal (rich) and Markdown; nothing is computed here."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from rigbench.analysis import KVCapacity, Roofline, SpeculationFit, SpeedupPrediction
from rigbench.report._cells import Note, Section, markdown_table, section_markdown, section_terminal
from rigbench.report._fmt import fmt_fixed, fmt_pct

__all__ = ["decode_efficiency_text", "kv_markdown", "kv_section", "kv_terminal", "roofline_markdown",
           "roofline_section", "roofline_terminal", "speculation_markdown", "speculation_section",
           "speculation_terminal", "speedup_markdown"]


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return "\n".join(markdown_table(Section("", header, rows), align=False))


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
                 ("efficiency", fmt_pct(r.efficiency)),
                 ("implied weight traffic", f"{fmt_fixed(r.implied_bandwidth_gb_s, 1)} GB/s")]
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
    return [[p.scenario + (" (*)" if p.scenario == fit.calibrated_on else ""), fmt_pct(p.prefill_share),
             fmt_fixed(p.mean_acceptance_length), fmt_fixed(f.predicted_speedup, 2, "×"), fmt_fixed(p.predicted_speedup, 2, "×"),
             fmt_fixed(p.measured_speedup, 2, "×")] for p, f in zip(fit.predictions, fit.free_drafter, strict=True)]


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
    rows = [[p.scenario, fmt_pct(p.prefill_share), fmt_fixed(p.mean_acceptance_length), fmt_fixed(p.predicted_speedup, 2, "×"),
             fmt_fixed(p.measured_speedup, 2, "×")] for p in preds]
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
