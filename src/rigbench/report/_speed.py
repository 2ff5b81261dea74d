"""Speed tables: scenario rows with median ± standard deviation and n, as in the seed write-ups."""

from __future__ import annotations

from rich import box
from rich.table import Table

from rigbench.analysis import SpeedSummary
from rigbench.report._fmt import fmt_stat

__all__ = ["speed_markdown", "speed_table"]

_HEAD = ["scenario", "in→out", "c", "n", "e2e tok/s", "decode tok/s", "TTFT ms", "ITL ms", "agg tok/s", "tok/chunk",
         "tokens"]
# The "tokens" column: where the token counts behind the row's figures came from.
PROVENANCE_KEY = ("tokens: usage = server usage, timings = llama.cpp timings, est. = estimated from chunks; "
                  "~chunk = tokens per chunk inferred from characters; ~reasoning = reasoning split estimated; "
                  "! = estimated where the engine could have reported exact counts")


def _cells(summary: SpeedSummary) -> list[list[str]]:
    rows = []
    for r in summary.rows:
        ttft = fmt_stat(r.ttft_s, digits=0, scale=1e3) if r.ttft_not_comparable is None else "n/c*"
        n = f"{r.requests - r.failed}" + (f" ({r.failed} failed)" if r.failed else "")
        shape = f"{r.input_tokens_target}→{r.output_tokens_target}"
        rows.append([r.scenario, shape, str(r.concurrency), n, fmt_stat(r.e2e_tok_s, digits=1),
                     fmt_stat(r.decode_tok_s, digits=1), ttft, fmt_stat(r.itl_s, digits=1, scale=1e3),
                     fmt_stat(r.aggregate_tok_s, digits=1),
                     f"{r.tokens_per_chunk:.2f}" if r.tokens_per_chunk is not None else "–",
                     r.provenance.label if r.provenance is not None else "–"])
    for name, reason in summary.skipped.items():
        rows.append([name, "", "", "skipped", reason, "", "", "", "", "", ""])
    return rows


def _redundant(summary: SpeedSummary) -> set[str]:
    """Columns that say nothing here: aggregate = end-to-end at concurrency 1; 1.00 tokens per chunk."""
    drop = set()
    if summary.rows and all(r.concurrency == 1 for r in summary.rows):
        drop |= {"agg tok/s", "c"}
    if summary.rows and all(r.tokens_per_chunk is None or abs(r.tokens_per_chunk - 1) < 0.005 for r in summary.rows):
        drop.add("tok/chunk")
    if summary.rows and all(r.provenance is not None and r.provenance.label == "usage" for r in summary.rows):
        drop.add("tokens")
    return drop


def speed_table(summary: SpeedSummary, *, compact: bool = False) -> Table:
    """`compact` (narrow terminals) drops columns that are redundant for this run, noted in the caption."""
    drop = _redundant(summary) if compact else set()
    notes = []
    if "agg tok/s" in drop:
        notes.append("concurrency 1 (aggregate tok/s = e2e)")
    if "tok/chunk" in drop:
        notes.append("one token per streamed chunk")
    if "tokens" in drop:
        notes.append("token counts from server usage, exact per chunk")
    else:
        notes.append(PROVENANCE_KEY)
    t = Table(title="Speed (median ± standard deviation over repetitions; warm-up excluded)", title_justify="left",
              box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, caption="; ".join(notes) or None,
              caption_justify="left")
    keep = [i for i, h in enumerate(_HEAD) if h not in drop]
    for i in keep:
        t.add_column(_HEAD[i], justify="left" if i < 2 else "right", overflow="fold", no_wrap=i in (0, 1))
    for row in _cells(summary):
        t.add_row(*(row[i] for i in keep))
    return t


def speed_markdown(summary: SpeedSummary) -> str:
    lines = ["| " + " | ".join(_HEAD) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(_HEAD) - 2)) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in _cells(summary)]
    notes = [f"- {r.scenario} (c={r.concurrency}): *TTFT not comparable: {r.ttft_not_comparable}."
             for r in summary.rows if r.ttft_not_comparable]
    notes.append(f"- {PROVENANCE_KEY}.")
    notes += [f"- {r.scenario} (c={r.concurrency}): **{r.provenance.flag}**."
              for r in summary.rows if r.provenance is not None and r.provenance.flag]
    return "\n".join(lines + (["", *notes] if notes else []))
