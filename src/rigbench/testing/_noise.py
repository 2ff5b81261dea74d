"""How late the OS wakes a sleeping process right now: the noise floor of any timing test.

`SchedulerNoise` runs a tiny probe in its own process (so neither the client's event loop nor the
GIL enters into it) that sleeps 0.5 ms again and again and records how late each wake-up is. A
client stamping a socket read waits for the same wake-ups, so when this probe sees millisecond
delays, no client on this machine can be judged at millisecond accuracy.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from types import TracebackType

from rigbench.records import Frozen

__all__ = ["NoiseFloor", "SchedulerNoise"]


class NoiseFloor(Frozen):
    samples: int
    wake_late_p50_s: float
    wake_late_p99_s: float
    wake_late_max_s: float


class SchedulerNoise:
    """`with SchedulerNoise() as noise: ...; noise.result` (a NoiseFloor, after the block)."""

    def __init__(self, sleep_s: float = 0.0005) -> None:
        self.sleep_s = sleep_s
        self.result: NoiseFloor | None = None
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> SchedulerNoise:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "rigbench.testing._noise", str(self.sleep_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        self._proc.stdout.readline()  # "ready"
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._proc is not None
        out, _ = self._proc.communicate("stop\n", timeout=30)
        self.result = NoiseFloor.model_validate_json(out.strip().splitlines()[-1])


def _probe(sleep_s: float) -> None:
    stop = threading.Event()

    def wait_for_stop() -> None:
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=wait_for_stop, daemon=True).start()
    print("ready", flush=True)
    late: list[float] = []
    while not stop.is_set():
        t = time.perf_counter()
        time.sleep(sleep_s)
        late.append(time.perf_counter() - t - sleep_s)
    late.sort()
    n = len(late)
    print(
        json.dumps(
            {
                "samples": n,
                "wake_late_p50_s": late[n // 2] if n else 0.0,
                "wake_late_p99_s": late[min(n - 1, int(n * 0.99))] if n else 0.0,
                "wake_late_max_s": late[-1] if n else 0.0,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    _probe(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0005)
