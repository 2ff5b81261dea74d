"""The host's conditions during one measured window: who used the CPU, steal, run queue, clocks, GPUs.

Raw counters only (CPU seconds over the window, sampled run-queue lengths and clock speeds); whether
the host was busy is judged in `rigbench.analysis` (docs/metrics.md, "Host conditions").
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rigbench.records._base import Frozen, Record

__all__ = ["EngineLocation", "GpuProcess", "HostConditions"]

# launched: rigbench started the engine (its process tree is known); local: an attached endpoint on
# this host whose listening process was found; remote: an endpoint on another host (its host is
# unknown); unknown: a local endpoint whose process could not be found (the reason is in `unknown`).
EngineLocation = Literal["launched", "local", "remote", "unknown"]


class GpuProcess(Frozen):
    """A compute process on one of the engine's GPUs that is not the engine's."""

    pid: int
    name: str
    gpu_uuid: str
    used_memory_mib: float | None = None


class HostConditions(Record):
    """One measured window (a speed scenario at one concurrency level, or at one rate)."""

    kind: Literal["host_conditions"] = "host_conditions"
    unit_id: str  # "host/<scenario>/c<concurrency>" (a rate window: "host/<scenario>/rate<r>")
    window: str  # as reports name it: "chat_short c=1"
    scenario: str
    concurrency: int | None = None
    rate_rps: float | None = None
    started_ns: int  # perf_counter_ns, the clock of every StreamResult stamp
    ended_ns: int
    engine: EngineLocation
    engine_pids: list[int] = Field(default_factory=list)  # the engine's process tree at the window's end
    engine_name: str | None = None  # the root process's name (e.g. "llama-server")
    cpus: list[int] = Field(default_factory=list)  # CPUs the engine and rigbench may run on (affinity masks)
    # CPU seconds over the window. busy: every process's time on `cpus` (from /proc/stat, user + nice +
    # system; interrupt time is charged to no process and left out); engine: its process tree; rigbench: this process, all threads (a child it
    # started that is not the engine counts as another process). Everything else = busy - engine - rigbench
    # (`other_cpu_s`). None: unknown (why: `unknown`).
    busy_cpu_s: float | None = None
    engine_cpu_s: float | None = None
    rigbench_cpu_s: float | None = None
    steal_s: float | None = None  # time the hypervisor gave `cpus` to other guests (/proc/stat steal)
    engine_in_rigbench: bool = False  # the engine runs inside rigbench's own process (an in-process emulator)
    run_queue: list[int] = Field(default_factory=list)  # procs_running in /proc/stat, sampled (whole host)
    cpu_mhz: list[float] = Field(default_factory=list)  # mean clock of `cpus`, sampled (cpufreq)
    cpu_max_mhz: float | None = None
    gpu_other: list[GpuProcess] | None = None  # None: not known or not applicable (see `unknown["gpu"]`)
    unknown: dict[str, str] = Field(default_factory=dict)  # figure -> why it could not be measured

    @property
    def wall_s(self) -> float:
        return max(0.0, (self.ended_ns - self.started_ns) / 1e9)

    @property
    def usable_cores(self) -> int:
        return len(self.cpus)

    @property
    def other_cpu_s(self) -> float | None:
        """CPU seconds of every process that is neither the engine nor rigbench (never below 0: the
        counters tick at 10 ms, so a quiet window may come out a tick short)."""
        if self.busy_cpu_s is None or self.engine_cpu_s is None or self.rigbench_cpu_s is None:
            return None
        own = self.engine_cpu_s if self.engine_in_rigbench else self.engine_cpu_s + self.rigbench_cpu_s
        return max(0.0, self.busy_cpu_s - own)
