"""Screen one generated text for gibberish: empty output, invalid characters, symbol soup,
script salad, short-period loops, and block repetition.

A misconfigured server can serve "fluent-looking gibberish at a perfectly normal speed" (seed
000). Nothing here knows what the right answer is; it only recognises text that no working
model would produce. Findings carry a severity:

- ``fail``: no working model writes this (empty output, U+FFFD / control characters, symbol
  soup, a short pattern looping over much of the text). One such output makes a run untrusted.
- ``warn``: suspicious but also what a small healthy model does when it is forced past its
  natural end (``ignore_eos``): block repetition and a low compression ratio. Reported, never
  gating on its own.

Thresholds are module constants, written in docs/honesty.md; tests/unit/test_gibberish_thresholds.py puts a
text on either side of each one.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
import zlib
from typing import Literal

from pydantic import Field

from rigbench.records import Frozen, GibberishFinding

__all__ = ["GibberishScreen", "screen_text"]


# -- thresholds (documented in docs/honesty.md) -------------------------------------------------
INVALID_CHARS_MAX_FRACTION = 0.01
SYMBOL_SOUP_MIN_CHARS = 20
SYMBOL_SOUP_MIN_ALNUM_FRACTION = 0.20  # markdown tables and code sit well above this
SCRIPT_SALAD_MIN_LETTERS = 40
SCRIPT_SALAD_MAX_SWITCH_RATE = 0.25  # script changes per letter
LOOP_MAX_PERIOD = 12  # chars
LOOP_MIN_REPEATS = 6
LOOP_MIN_COVERAGE = 0.30  # share of the text covered by the longest loop
NGRAM_MIN_COUNT = 30
NGRAM_MIN_DISTINCT_RATIO = 0.30
COMPRESSION_MIN_BYTES = 200
COMPRESSION_MIN_RATIO = 0.20


class GibberishScreen(Frozen):
    """The statistics of one text and what they say."""

    kind: Literal["gibberish_screen"] = "gibberish_screen"
    text_chars: int
    compression_ratio: float | None  # compressed / raw bytes; None below COMPRESSION_MIN_BYTES
    distinct_ngram_ratio: float | None  # distinct / total n-grams; None below NGRAM_MIN_COUNT
    alnum_fraction: float | None  # letters+digits among non-space chars
    loop_coverage: float  # share of the text covered by the longest short-period loop
    findings: list[GibberishFinding] = Field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(f.severity == "fail" for f in self.findings)


def screen_text(text: str) -> GibberishScreen:
    """Measure `text` and list every threshold it crosses."""
    findings: list[GibberishFinding] = []
    stripped = text.strip()
    if not stripped:
        return GibberishScreen(
            text_chars=len(text), compression_ratio=None, distinct_ngram_ratio=None,
            alnum_fraction=None, loop_coverage=0.0,
            findings=[GibberishFinding(kind="empty", severity="fail", value=0.0, threshold=1.0,
                                       detail="the output is empty or whitespace only")],
        )

    n = len(stripped)
    invalid = sum(1 for ch in stripped if ch == "\ufffd" or _is_bad_control(ch))
    if invalid / n > INVALID_CHARS_MAX_FRACTION:
        findings.append(GibberishFinding(
            kind="invalid_chars", severity="fail", value=invalid / n, threshold=INVALID_CHARS_MAX_FRACTION,
            detail=f"{invalid} replacement/control characters in {n}",
        ))

    visible = [ch for ch in stripped if not ch.isspace()]
    alnum_fraction: float | None = None
    if len(visible) >= SYMBOL_SOUP_MIN_CHARS:
        alnum = sum(1 for ch in visible if ch.isalnum())
        alnum_fraction = alnum / len(visible)
        if alnum_fraction < SYMBOL_SOUP_MIN_ALNUM_FRACTION:
            findings.append(GibberishFinding(
                kind="symbol_soup", severity="fail", value=alnum_fraction,
                threshold=SYMBOL_SOUP_MIN_ALNUM_FRACTION,
                detail=f"only {alnum_fraction:.0%} letters/digits: {_excerpt(stripped)}",
            ))

    switch_rate = _script_switch_rate(stripped)
    if switch_rate is not None and switch_rate > SCRIPT_SALAD_MAX_SWITCH_RATE:
        findings.append(GibberishFinding(
            kind="script_salad", severity="fail", value=switch_rate, threshold=SCRIPT_SALAD_MAX_SWITCH_RATE,
            detail=f"writing system changes every {1 / switch_rate:.1f} letters: {_excerpt(stripped)}",
        ))

    coverage, period, unit = _longest_short_loop(stripped)
    if coverage >= LOOP_MIN_COVERAGE:
        findings.append(GibberishFinding(
            kind="short_loop", severity="fail", value=coverage, threshold=LOOP_MIN_COVERAGE,
            detail=f"{unit!r} (period {period}) repeats back to back over {coverage:.0%} of the text",
        ))

    distinct = _distinct_ngram_ratio(stripped)
    if distinct is not None and distinct < NGRAM_MIN_DISTINCT_RATIO:
        findings.append(GibberishFinding(
            kind="block_repetition", severity="warn", value=distinct, threshold=NGRAM_MIN_DISTINCT_RATIO,
            detail=f"only {distinct:.0%} of n-grams are distinct: {_excerpt(stripped[-120:])}",
        ))

    raw = stripped.encode()
    ratio: float | None = None
    if len(raw) >= COMPRESSION_MIN_BYTES:
        ratio = len(zlib.compress(raw, 9)) / len(raw)
        if ratio < COMPRESSION_MIN_RATIO:
            findings.append(GibberishFinding(
                kind="low_compression", severity="warn", value=ratio, threshold=COMPRESSION_MIN_RATIO,
                detail=f"zlib compresses {len(raw)} bytes to {ratio:.0%}",
            ))

    return GibberishScreen(
        text_chars=len(text), compression_ratio=ratio, distinct_ngram_ratio=distinct,
        alnum_fraction=alnum_fraction, loop_coverage=coverage, findings=findings,
    )


def _is_bad_control(ch: str) -> bool:
    return unicodedata.category(ch) == "Cc" and ch not in "\n\r\t"


def _excerpt(text: str, n: int = 60) -> str:
    one_line = " ".join(text.split())
    return repr(one_line[:n] + ("…" if len(one_line) > n else ""))


# Kana and Han are one group: Japanese mixes them in every sentence.
_SCRIPT_PREFIXES = (
    ("LATIN", "latin"), ("CJK", "cjk"), ("HIRAGANA", "cjk"), ("KATAKANA", "cjk"),
    ("HANGUL", "hangul"), ("CYRILLIC", "cyrillic"), ("GREEK", "greek"), ("ARABIC", "arabic"),
    ("HEBREW", "hebrew"), ("DEVANAGARI", "devanagari"), ("THAI", "thai"),
)


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    for prefix, group in _SCRIPT_PREFIXES:
        if name.startswith(prefix):
            return group
    return "other"


def _script_switch_rate(text: str) -> float | None:
    scripts = [_script(ch) for ch in text if ch.isalpha()]
    if len(scripts) < SCRIPT_SALAD_MIN_LETTERS:
        return None
    switches = sum(1 for a, b in itertools.pairwise(scripts) if a != b)
    return switches / len(scripts)


_LOOP_RE = re.compile(rf"(.{{1,{LOOP_MAX_PERIOD}}}?)\1{{{LOOP_MIN_REPEATS - 1},}}", re.DOTALL)


def _longest_short_loop(text: str) -> tuple[float, int, str]:
    """(coverage, period, unit) of the longest back-to-back repeat of a short unit."""
    best = (0.0, 0, "")
    for m in _LOOP_RE.finditer(text):
        unit = m.group(1)
        if unit.isspace():
            # runs of blank lines or indentation are layout, not a loop
            continue
        coverage = (m.end() - m.start()) / len(text)
        if coverage > best[0]:
            best = (coverage, len(unit), unit)
    return best


def _distinct_ngram_ratio(text: str) -> float | None:
    """Distinct / total word 3-grams; char 6-grams for text without spaces (Japanese, Chinese)."""
    words = text.split()
    grams: list[tuple[str, ...]] | list[str]
    if len(words) >= NGRAM_MIN_COUNT + 2 and len(words) * 12 >= len(text):
        grams = [tuple(words[i:i + 3]) for i in range(len(words) - 2)]
    else:
        compact = "".join(words)
        grams = [compact[i:i + 6] for i in range(len(compact) - 5)]
    if len(grams) < NGRAM_MIN_COUNT:
        return None
    return len(set(grams)) / len(grams)
