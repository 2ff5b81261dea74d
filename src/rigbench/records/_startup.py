"""How long a launched rig took to start."""

from __future__ import annotations

from typing import Literal

from rigbench.records._base import Record

__all__ = ["StartupTiming"]


class StartupTiming(Record):
    """spawn -> healthy -> first successful completion, each on the monotonic clock."""

    kind: Literal["startup"] = "startup"
    unit_id: str = "startup"
    spawn_to_healthy_s: float
    healthy_to_first_completion_s: float
    spawn_to_first_completion_s: float
    # vLLM: "cold" (torch.compile ran), "warm" (compiled graphs loaded from its cache), "off"
    # (--enforce-eager); None where the engine compiles nothing or did not say
    compile_cache: str | None = None
    compile_s: float | None = None  # the engine's own figure for compiling or loading the graphs
