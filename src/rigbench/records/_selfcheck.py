"""The client's own load during one monitored span, as `SelfCheckMonitor` measured it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rigbench.records._base import Record

__all__ = ["SelfCheck"]


class SelfCheck(Record):
    """The client's own load during one monitored span (one suite, usually)."""

    kind: Literal["selfcheck"] = "selfcheck"
    unit_id: str  # "selfcheck/<label>"
    label: str
    wall_s: float
    cpu_s: float  # this process, user + system, all threads
    cpu_cores: int  # os.cpu_count() at the time
    loop_lag_samples: int
    loop_lag_p50_s: float | None
    loop_lag_p99_s: float | None
    loop_lag_max_s: float | None
    send_lag_samples: int
    send_lag_p50_s: float | None
    send_lag_p99_s: float | None
    send_lag_max_s: float | None
    gc_pauses: int = 0  # garbage collections during the span (each stops the loop)
    gc_pause_total_s: float = 0.0
    gc_pause_max_s: float = 0.0
    # Each collection of at least GC_SLOW_PAUSE_S, in order (at most GC_SLOW_PAUSES_KEPT), with the
    # CPU time this thread spent in it: a pause whose CPU is far below its wall time was the OS
    # running something else, not the collector working (the remedies differ).
    gc_slow_pauses_s: list[float] = Field(default_factory=list)
    gc_slow_pauses_cpu_s: list[float] = Field(default_factory=list)
    loop: str  # event loop class, e.g. "uvloop.Loop" or "_UnixSelectorEventLoop"

    @property
    def cpu_fraction(self) -> float:
        """CPU used as a fraction of one core (the event loop runs on one core)."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0
