"""Speed tables: scenario rows with median ± standard deviation over requests, as in the seed
write-ups, and a latency-percentile table (p50 / p90 / p99 with n) for TTFT, ITL and e2e latency.

Headers say exactly what each figure is; the terminal uses short two-line headers with a key
below the table, Markdown and HTML the full words. Definitions: docs/metrics.md.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.table import Table

from rigbench.analysis import ScenarioSpeed, SpeedSummary, Stat
from rigbench.report._cells import Note, Section, section_markdown, simple_table
from rigbench.report._fmt import fmt_itl_ms, fmt_tok_s, fmt_ttft_ms

__all__ = ["LATENCY_HEAD", "NC_NOTE", "NM", "NOT_COMPARABLE", "PROVENANCE_KEY", "SPEED_HEAD", "latency_cells", "latency_markdown", "latency_section",
           "latency_table", "not_measurable_notes", "speed_cells", "speed_markdown", "speed_section", "speed_table"]


class _Col(NamedTuple):
    key: str
    full: str  # Markdown / HTML header: says exactly what the figure is
    short: str  # terminal header (may hold a line break; explained in the key under the table)


_COLS = [
    _Col("scenario", "scenario", "scenario"),
    _Col("shape", "in→out tokens", "in→out"),
    _Col("c", "concurrency", "c"),
    _Col("n", "n requests", "n"),
    _Col("e2e", "e2e tok/s per request", "e2e\ntok/s"),
    _Col("decode", "decode tok/s per request", "decode\ntok/s"),
    _Col("ttft", "TTFT ms", "TTFT\nms"),
    _Col("itl", "ITL ms, per-request mean", "ITL ms\n/req"),
    _Col("agg", "aggregate tok/s per batch", "agg\ntok/s"),
    _Col("tpc", "tokens per chunk", "tok/\nchunk"),
    _Col("tokens", "token counts from", "tokens\nfrom"),
]
SPEED_HEAD = [c.full for c in _COLS]

_SPEED_KEY = ("e2e tok/s = output tokens / (last chunk − sent); decode tok/s = tokens after the first chunk / "
              "decode time; ITL per request (/req) = each request's decode time / its tokens after the first "
              "chunk = 1 / decode tok/s; aggregate (agg) = a batch's tokens / its wall time.")
# The "tokens" column: where the token counts behind the row's figures came from.
PROVENANCE_KEY = ("tokens from: usage = server usage, timings = llama.cpp timings, est. = estimated from chunks; "
                  "~chunk = tokens per chunk inferred from characters; ~reasoning = reasoning split estimated; "
                  "! = estimated where the engine could have reported exact counts")
# TTFT withheld: chunks carried several tokens (RequestTiming.ttft_not_comparable); every report and the progress line
NOT_COMPARABLE = "n/c*"
NC_NOTE = f"{NOT_COMPARABLE}: TTFT not comparable: chunks carried several tokens each, so the first is not the first token."
NM = "n/m†"  # latency not measurable: the streams arrived buffered (ScenarioSpeed.latency_not_measurable)
_NM_NOTE = (f"{NM}: not measurable: the streams arrived buffered by the server or a proxy (the finding above names "
            "the pattern), so TTFT, ITL and decode tok/s would time the buffer, not the engine.")


def not_measurable_notes(summary: SpeedSummary) -> list[str]:
    """One line per row whose latency is withheld, with the reason (Markdown and HTML notes)."""
    return [f"{r.scenario} (c={r.concurrency}): {NM} TTFT, ITL and decode tok/s not measurable: "
            f"{r.latency_not_measurable}" for r in summary.rows if r.latency_not_measurable]


def _n(r: ScenarioSpeed) -> str:
    return f"{r.requests - r.failed}" + (f" ({r.failed} failed)" if r.failed else "")


def speed_cells(summary: SpeedSummary) -> list[list[str]]:
    """One row per scenario and concurrency, in `SPEED_HEAD` order (a skipped scenario is a note:
    `speed_section`)."""
    rows = []
    for r in summary.rows:
        ttft = fmt_ttft_ms(r.ttft_s) if r.ttft_not_comparable is None else NOT_COMPARABLE
        decode, itl = fmt_tok_s(r.decode_tok_s), fmt_itl_ms(r.itl_mean_s)
        if r.latency_not_measurable:
            ttft = decode = itl = NM
        rows.append([r.scenario, f"{r.input_tokens_target}→{r.output_tokens_target}", str(r.concurrency), _n(r),
                     fmt_tok_s(r.e2e_tok_s), decode, ttft, itl, fmt_tok_s(r.aggregate_tok_s),
                     f"{r.tokens_per_chunk:.2f}" if r.tokens_per_chunk is not None else "–",
                     r.provenance.label if r.provenance is not None else "–"])
    return rows


def _redundant(summary: SpeedSummary) -> set[str]:
    """Columns that say nothing here: aggregate = end-to-end at concurrency 1; 1.00 tokens per chunk."""
    drop = set()
    if summary.rows and all(r.concurrency == 1 for r in summary.rows):
        drop |= {"agg", "c"}
    if summary.rows and all(r.tokens_per_chunk is None or abs(r.tokens_per_chunk - 1) < 0.005 for r in summary.rows):
        drop.add("tpc")
    if summary.rows and all(r.provenance is not None and r.provenance.label == "usage" for r in summary.rows):
        drop.add("tokens")
    return drop


def speed_section(summary: SpeedSummary) -> Section:
    """The speed table as one description for every medium: the columns that say nothing for this run
    (the same value in every row) left out and named in an `Every row:` note, then the key and the
    per-row notes (TTFT not comparable or not measurable, where token counts came from)."""
    drop = _redundant(summary)
    keep = [i for i, c in enumerate(_COLS) if c.key not in drop]
    caption = _caption(summary, drop)
    notes = ([Note(caption)] if caption else []) + [Note(_SPEED_KEY, "muted")]
    if "tokens" not in drop:
        notes.append(Note(PROVENANCE_KEY, "muted"))
    if any(r.ttft_not_comparable for r in summary.rows):
        notes.append(Note(NC_NOTE, "muted"))
    notes += [Note(f"{r.scenario} (c={r.concurrency}): {NOT_COMPARABLE} TTFT not comparable: {r.ttft_not_comparable}", "warn")
              for r in summary.rows if r.ttft_not_comparable]
    if any(r.latency_not_measurable for r in summary.rows):
        notes.append(Note(_NM_NOTE, "muted"))
    notes += [Note(n, "warn") for n in not_measurable_notes(summary)]
    notes += [Note(f"{r.scenario} (c={r.concurrency}): {r.provenance.flag}", "warn")
              for r in summary.rows if r.provenance is not None and r.provenance.flag]
    notes += [Note(f"Skipped: {name}: {reason}.", "notable") for name, reason in summary.skipped.items()]
    return Section("Speed", [SPEED_HEAD[i] for i in keep], [[row[i] for i in keep] for row in speed_cells(summary)],
                   notes, left_cols=2, short_head=[_COLS[i].short for i in keep],
                   lead="Median ± standard deviation over requests (warm-up excluded).")


def speed_table(summary: SpeedSummary) -> Table:
    """The speed section as a rich table (short headers), for callers that place it themselves."""
    return simple_table(speed_section(summary))


def _caption(summary: SpeedSummary, drop: set[str]) -> str | None:
    """The values of the columns left out because every row has the same one, in one line."""
    same = (["concurrency 1 (aggregate tok/s = e2e)"] if "agg" in drop else []) + (
        ["1.00 tokens per chunk"] if "tpc" in drop else []) + (
        ['token counts from "usage" (server-reported)'] if "tokens" in drop else [])
    return "Every row: " + "; ".join(same) + "." if same else None


def speed_markdown(summary: SpeedSummary) -> str:
    return section_markdown(speed_section(summary), heading=None)


# -- latency percentiles ---------------------------------------------------------------------------

LATENCY_HEAD = ["scenario", "metric", "n", "p50 ms", "p90 ms", "p99 ms"]
LATENCY_KEY = ("Percentiles over requests (n = requests), except ITL per token: every gap between "
               "tokens of every request, pooled (n = gaps). ITL per request is the headline: "
               "each request's decode time / its tokens after the first chunk.")


def _pcts(s: Stat | None, digits: int) -> list[str]:
    if s is None or s.n == 0:
        return ["–", "–", "–", "–"]
    return [str(s.n)] + [f"{v * 1e3:.{digits}f}" if v is not None else "–" for v in (s.median, s.p90, s.p99)]


def latency_cells(summary: SpeedSummary) -> list[list[str]]:
    """Four rows per scenario and concurrency (TTFT, ITL per request, ITL per token, e2e latency)."""
    multi_conc = len({r.concurrency for r in summary.rows}) > 1
    rows = []
    for r in summary.rows:
        label = r.scenario + (f" c={r.concurrency}" if multi_conc else "")
        ttft = [NOT_COMPARABLE, "", "", ""] if r.ttft_not_comparable else _pcts(r.ttft_s, 0)
        itl, gaps = _pcts(r.itl_mean_s, 1), _pcts(r.itl_gaps_s, 1)
        if r.latency_not_measurable:
            ttft = itl = gaps = [NM, "", "", ""]
        rows += [[label, "TTFT", *ttft],
                 ["", "ITL per request", *itl],
                 ["", "ITL per token (pooled)", *gaps],
                 ["", "e2e latency", *_pcts(r.e2e_latency_s, 0)]]
    return rows


def latency_section(summary: SpeedSummary) -> Section:
    """A vertical layout (four rows per scenario and level): it fits 80 columns whatever the number
    of scenarios."""
    nm = [Note(_NM_NOTE, "warn")] if any(r.latency_not_measurable for r in summary.rows) else []
    return Section("Latency percentiles (ms)", LATENCY_HEAD, latency_cells(summary), [Note(LATENCY_KEY, "muted"), *nm],
                   left_cols=2)


def latency_table(summary: SpeedSummary) -> Table:
    return simple_table(latency_section(summary))


def latency_markdown(summary: SpeedSummary) -> str:
    return section_markdown(latency_section(summary), heading=None)
