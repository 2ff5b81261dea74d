"""Number formatting shared by the terminal and Markdown renderers."""

from __future__ import annotations

from rigbench.analysis import MAX_NEEDED, Stat

__all__ = ["fmt_bytes", "fmt_fixed", "fmt_itl_ms", "fmt_margin", "fmt_pct", "fmt_stat", "fmt_tok_s",
           "fmt_tok_s_mean", "fmt_tok_s_median", "fmt_ttft_ms", "verdict_cell", "verdict_sentence"]


def fmt_stat(s: Stat | None, *, digits: int = 2, scale: float = 1.0, unit: str = "") -> str:
    if s is None or s.n == 0:
        return "–"
    return f"{s.median * scale:.{digits}f}±{s.std * scale:.{digits}f}{unit}"


# The speed figures (median ± standard deviation over requests) are written by one rule in every table
# that shows them (per-run speed table, HTML headline and cross-run tables, the end-of-report summary):
# tok/s to about three significant digits, TTFT to the whole millisecond, ITL to 0.1 ms. At the spreads
# these figures have (a few percent), a further digit is noise.


def fmt_tok_s(s: Stat | None) -> str:
    """tok/s to about three significant digits: 65.4±0.4, 121±2, 1663±25."""
    if s is None or s.n == 0:
        return "–"
    return fmt_stat(s, digits=0 if abs(s.median) >= 100 else 1 if abs(s.median) >= 10 else 2)


def fmt_tok_s_mean(s: Stat | None) -> str:
    """Mean ± standard deviation, to the digits `fmt_tok_s` gives a median: beside a ratio of means."""
    if s is None or s.n == 0:
        return "–"
    d = 0 if abs(s.mean) >= 100 else 1 if abs(s.mean) >= 10 else 2
    return f"{s.mean:.{d}f}±{s.std:.{d}f}"


def fmt_tok_s_median(s: Stat | None) -> str:
    """The median alone, to the digits `fmt_tok_s` gives it: 65.4, 121, 1663."""
    if s is None or s.n == 0:
        return "–"
    return f"{s.median:.{0 if abs(s.median) >= 100 else 1 if abs(s.median) >= 10 else 2}f}"


def fmt_ttft_ms(s: Stat | None) -> str:
    """TTFT in whole milliseconds: 73±5 (given in seconds)."""
    return fmt_stat(s, digits=0, scale=1e3)


def fmt_itl_ms(s: Stat | None) -> str:
    """ITL in milliseconds to 0.1 ms: 15.1±0.1 (given in seconds)."""
    return fmt_stat(s, digits=1, scale=1e3)


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n = n / 1024  # type: ignore[assignment]
    return str(n)


def fmt_margin(margin: float, unit: str = "%") -> str:
    """±5% for a speed ratio's margin, ±5 pts for an accuracy's (`unit=" pts"`)."""
    return f"±{margin * 100:g}{unit}"


def _count(n: int) -> str:
    return f"more than {MAX_NEEDED:,}" if n > MAX_NEEDED else f"{n:,}"


def verdict_cell(verdict: str, margin: float, needed: int | None, *, unit: str = "%") -> str:
    """The verdict in a table cell: 'same ±5%', 'differs', 'inconclusive, ~46/side' (the table's
    note spells out the last one with `verdict_sentence`)."""
    if verdict == "same":
        return f"same {fmt_margin(margin, unit)}"
    if verdict == "inconclusive" and needed is not None:
        return f"inconclusive, ~{_count(needed)}/side"
    return verdict


def verdict_sentence(verdict: str, margin: float, needed: int | None, *, unit: str = "%",
                     per: str = "repetitions per side", reason: str | None = None) -> str:
    """'same within ±5%', 'differs', or 'inconclusive: about 46 repetitions per side would tell ±5%'."""
    if verdict == "same":
        return f"same within {fmt_margin(margin, unit)}"
    if verdict != "inconclusive":
        return verdict
    if needed is None:
        return f"inconclusive: {reason or 'no spread to plan from'}"
    return f"inconclusive: about {_count(needed)} {per} would tell {fmt_margin(margin, unit)}"


def fmt_fixed(v: float | None, digits: int = 2, suffix: str = "") -> str:
    """A figure to fixed digits, "–" when there is none."""
    return "–" if v is None else f"{v:.{digits}f}{suffix}"


def fmt_pct(v: float | None) -> str:
    """A share as a percentage to 0.1, "–" when there is none."""
    return "–" if v is None else f"{v:.1%}"
