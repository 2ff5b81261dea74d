"""Number formatting shared by the terminal and Markdown renderers."""

from __future__ import annotations

from rigbench.analysis import Stat

__all__ = ["fmt_bytes", "fmt_stat"]


def fmt_stat(s: Stat | None, *, digits: int = 2, scale: float = 1.0, unit: str = "") -> str:
    if s is None or s.n == 0:
        return "–"
    return f"{s.median * scale:.{digits}f}±{s.std * scale:.{digits}f}{unit}"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n = n / 1024  # type: ignore[assignment]
    return str(n)
