"""The record of the checks on the measured traffic (prompt dependence, token counts, timings)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rigbench.records._base import Record

__all__ = ["TrafficCheck"]


class TrafficCheck(Record):
    """One record (kind="traffic_check") per run: what was compared and what was found."""

    kind: Literal["traffic_check"] = "traffic_check"
    unit_id: str = "traffic_check"
    outputs: int  # measured outputs compared for prompt dependence
    duplicate_outputs: int  # outputs equal to another prompt's output or to a gate answer
    usage_checked: int  # requests whose reported output tokens were recounted
    usage_method: Literal["tokenize", "bytes_bound", "none"]
    usage_inflated: int
    timings_checked: int  # requests carrying llama.cpp-style timings
    timings_inconsistent: int
    reasons: list[str] = Field(default_factory=list)  # why the traffic is not trusted (empty: fine)
    examples: list[str] = Field(default_factory=list)

    @property
    def trusted(self) -> bool:
        return not self.reasons
