"""Speed tables: scenario rows with median ± standard deviation and n, as in the seed write-ups."""

from __future__ import annotations

from rich.table import Table

from rigbench.analysis import SpeedSummary
from rigbench.report._fmt import fmt_stat

__all__ = ["speed_markdown", "speed_table"]

_HEAD = ["scenario", "in / out", "conc", "n", "e2e tok/s", "decode tok/s", "TTFT ms", "ITL ms", "aggregate tok/s",
         "tok/chunk"]


def _cells(summary: SpeedSummary) -> list[list[str]]:
    rows = []
    for r in summary.rows:
        ttft = fmt_stat(r.ttft_s, digits=1, scale=1e3) if r.ttft_not_comparable is None else "n/c*"
        n = f"{r.requests - r.failed}" + (f" ({r.failed} failed)" if r.failed else "")
        shape = f"{r.input_tokens_target} / {r.output_tokens_target}"
        rows.append([r.scenario, shape, str(r.concurrency), n, fmt_stat(r.e2e_tok_s, digits=1),
                     fmt_stat(r.decode_tok_s, digits=1), ttft, fmt_stat(r.itl_s, digits=2, scale=1e3),
                     fmt_stat(r.aggregate_tok_s, digits=1),
                     f"{r.tokens_per_chunk:.2f}" if r.tokens_per_chunk is not None else "–"])
    for name, reason in summary.skipped.items():
        rows.append([name, "", "", "skipped", reason, "", "", "", "", ""])
    return rows


def speed_table(summary: SpeedSummary) -> Table:
    t = Table(title="Speed (median ± standard deviation over repetitions; warm-up excluded)", title_justify="left")
    for i, h in enumerate(_HEAD):
        t.add_column(h, justify="left" if i < 2 else "right", overflow="fold")
    for row in _cells(summary):
        t.add_row(*row)
    return t


def speed_markdown(summary: SpeedSummary) -> str:
    lines = ["| " + " | ".join(_HEAD) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(_HEAD) - 2)) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in _cells(summary)]
    notes = [f"- {r.scenario} (c={r.concurrency}): *TTFT not comparable: {r.ttft_not_comparable}."
             for r in summary.rows if r.ttft_not_comparable]
    return "\n".join(lines + ([""] + notes if notes else []))
