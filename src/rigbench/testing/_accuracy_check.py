"""Judge a timing-accuracy measurement, telling the machine's noise from the client's own load.

A measurement misses its bound either because the machine is busy (other processes keep the
client off the CPU: not the client's fault) or because the client is slow (its own work per read
queues the reads behind each other). The old rule asked a noise probe running *during* the
measurement on the same cores; a slow client starves that probe too, so a slow client looked like
a noisy machine and the test skipped instead of failing.

Two separate measurements here:

- **Machine noise**, measured by a probe process while the client is idle, just before and just
  after the measurement (`measure_noise`): the CPU share a busy process gets (spinning in 2 ms
  slices: CPU time / wall time; 1.0 on an idle core) and how late 0.5 ms sleeps wake up (p99).
  The client cannot starve it, since it is not running.
- **The client's own load**, in CPU time, which noise does not inflate the way it inflates wall
  time: client CPU seconds per second of the emulator's nominal schedule (`own_load`). Above
  1.0 the client needs more than a whole core to keep up with the stream, so it falls behind on
  any machine, however quiet.

- **The test's own contention**: the emulator is a process on the same machine, and its CPU time
  during the measurement (`server_cpu_s`) plus the client's, per second of schedule and per usable
  core, is how busy the measurement itself keeps the machine (`rig_share`). On a 2-core box at 512
  streams the two need about 0.6 + 0.6 cores in bursts (measured 2026-11-30: client 0.64, emulator
  1.1 with connection set-up): the machine is saturated by the test, and a miss there says nothing
  about the client. Above MAX_RIG_SHARE (a quarter of the cores) the machine is not quiet,
  whatever the idle probes saw: a CI run on the 2-core box failed 64 streams on asyncio at an ITL
  error p99 of 1.39 ms with the two at 30% and wake-ups at 0.48 ms p99 (2026-11-30).

Verdict: **pass** when TTFT and ITL errors are within the bound at p99. A miss **fails** when the
client's own load exceeds MAX_OWN_LOAD (checked first: no contention excuses a client that needs
more than a core), or when the machine was quiet (CPU share >= 0.9 and wake-up p99 <= half the
bound both before and after, and rig_share <= MAX_RIG_SHARE); otherwise it is **too_noisy** (the
test skips with the figures). Figures behind 1.5 (tests/unit/test_accuracy.py): a healthy client's own load
is 0.4-0.6 at 512 streams on a quiet 16-core host and up to 0.9 on the shared 2-core box at load
average 18; one that does 300 us of CPU work per event is at 1.8-2.2 at 64 streams (at least 1.77 by
construction) and about 3.7 at 512.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Literal

from rigbench.records import Frozen
from rigbench.testing._accuracy import AccuracyReport

__all__ = ["MAX_OWN_LOAD", "MAX_RIG_SHARE", "AccuracyVerdict", "MachineNoise", "judge_accuracy", "measure_noise", "own_load"]

MAX_OWN_LOAD = 1.5
MAX_RIG_SHARE = 0.25
QUIET_CPU_SHARE = 0.9

_PROBE = r"""
import json, sys, time
probe_s = float(sys.argv[1])
wall0, cpu0 = time.perf_counter(), time.process_time()
while time.perf_counter() - wall0 < probe_s / 2:  # spin: what CPU share does a busy process get?
    end = time.process_time() + 0.002
    while time.process_time() < end and time.perf_counter() - wall0 < probe_s:
        pass
share = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
late = []
t_end = time.perf_counter() + probe_s / 2
while time.perf_counter() < t_end:  # sleep: how late do wake-ups come?
    t = time.perf_counter()
    time.sleep(0.0005)
    late.append(time.perf_counter() - t - 0.0005)
late.sort()
print(json.dumps({"cpu_share": min(1.0, share), "wake_late_p99_s": late[int(len(late) * 0.99)] if late else 0.0}))
"""


class MachineNoise(Frozen):
    cpu_share: float  # CPU time / wall time of a spinning process (1.0: a core to itself)
    wake_late_p99_s: float  # lateness of 0.5 ms sleeps, p99


class AccuracyVerdict(Frozen):
    kind: Literal["pass", "fail", "too_noisy"]
    worst_err_p99_s: float  # max of TTFT and ITL error p99
    own_load: float  # client CPU s per second of nominal schedule
    rig_share: float  # (client + emulator CPU s) per second of schedule, per usable core
    quiet: bool  # the machine was quiet before and after, and the test itself left it half idle
    reason: str


def measure_noise(probe_s: float = 0.2) -> MachineNoise:
    """The machine's noise while this process is idle, seen by one probe process per CPU at once.

    The timing tests need every core (the client and the emulator are separate processes), so a
    machine is only as quiet as its busiest core: the lowest share and the latest wake-up count.
    """
    n = max(1, os.cpu_count() or 1)
    procs = [subprocess.Popen([sys.executable, "-c", _PROBE, str(probe_s)], stdout=subprocess.PIPE, text=True)
             for _ in range(n)]
    seen = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"the noise probe exited with {proc.returncode}")
        seen.append(MachineNoise.model_validate(json.loads(out.strip().splitlines()[-1])))
    return MachineNoise(cpu_share=min(m.cpu_share for m in seen),
                        wake_late_p99_s=max(m.wake_late_p99_s for m in seen))


def own_load(client_cpu_s: float, schedule_s: float) -> float:
    """Client CPU seconds per second of the stream's nominal schedule (noise hardly inflates CPU time)."""
    return client_cpu_s / schedule_s if schedule_s > 0 else float("inf")


def judge_accuracy(rep: AccuracyReport, before: MachineNoise, after: MachineNoise, *, bound_s: float,
                   client_cpu_s: float, schedule_s: float, server_cpu_s: float, cores: int) -> AccuracyVerdict:
    """pass, fail, or too_noisy (a miss on a busy machine by a client whose own load is sustainable).

    `server_cpu_s` is the emulator's CPU time over the same measurement, `cores` the CPUs the
    two may run on.
    """
    worst = max(rep.ttft_err_p99_s, rep.itl_err_p99_s)
    load = own_load(client_cpu_s, schedule_s)
    rig_share = own_load(client_cpu_s + server_cpu_s, schedule_s) / max(1, cores)
    quiet = rig_share <= MAX_RIG_SHARE and all(
        n.cpu_share >= QUIET_CPU_SHARE and n.wake_late_p99_s <= bound_s / 2 for n in (before, after))
    figures = (f"TTFT err p99 {rep.ttft_err_p99_s * 1e3:.2f} ms, ITL err p99 {rep.itl_err_p99_s * 1e3:.2f} ms; "
               f"client own load {load:.2f} cores ({client_cpu_s * 1e3:.0f} ms CPU over a {schedule_s:.2f} s "
               f"schedule); client + emulator keep {rig_share:.0%} of {cores} cores busy; "
               f"machine with the client idle: CPU share {before.cpu_share:.2f} before, "
               f"{after.cpu_share:.2f} after, wake-up lateness p99 {before.wake_late_p99_s * 1e3:.2f} / "
               f"{after.wake_late_p99_s * 1e3:.2f} ms")

    def verdict(kind: Literal["pass", "fail", "too_noisy"], why: str) -> AccuracyVerdict:
        return AccuracyVerdict(kind=kind, worst_err_p99_s=worst, own_load=load, rig_share=rig_share, quiet=quiet,
                               reason=f"{why}: {figures}")

    if worst <= bound_s:
        return verdict("pass", f"within {bound_s * 1e3:g} ms at p99")
    if load > MAX_OWN_LOAD:
        return verdict("fail", f"the client's own work needs more than {MAX_OWN_LOAD:g} core to keep up")
    if quiet:
        return verdict("fail", f"timing error above {bound_s * 1e3:g} ms at p99 on a quiet machine")
    return verdict("too_noisy", f"machine too busy to judge a {bound_s * 1e3:g} ms bound")
