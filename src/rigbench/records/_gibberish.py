"""What the gibberish screen found: one finding per crossed threshold, and the screen of a run's outputs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rigbench.records._base import Frozen, Record

__all__ = ["GibberishFinding", "GibberishKind", "GibberishSeverity", "OutputScreen"]

GibberishKind = Literal[
    "empty",  # nothing but whitespace
    "invalid_chars",  # U+FFFD replacement characters or control characters
    "symbol_soup",  # too few letters and digits among the non-space characters
    "script_salad",  # letters switch writing system far more often than any language does
    "short_loop",  # a pattern of <= LOOP_MAX_PERIOD chars repeats back to back over much of the text
    "block_repetition",  # few distinct word/char n-grams: whole phrases repeat
    "low_compression",  # zlib squeezes the text far below what prose compresses to
]


GibberishSeverity = Literal["fail", "warn"]


class GibberishFinding(Frozen):
    kind: GibberishKind
    severity: GibberishSeverity
    value: float  # the measured statistic
    threshold: float  # the limit it crossed
    detail: str  # what was seen, for the report (short excerpt included)


class OutputScreen(Record):
    """The gibberish screen over every perf output of a run (one record, kind="output_screen")."""

    kind: Literal["output_screen"] = "output_screen"
    unit_id: str = "output_screen"
    outputs: int  # outputs screened (failed requests are not outputs)
    failed_outputs: int  # outputs with at least one "fail" finding
    warned_outputs: int  # outputs with only "warn" findings
    examples: list[str] = Field(default_factory=list)  # up to 5 "unit_id: finding" lines
    trusted: bool
