"""SIGTERM and SIGHUP stop rigbench the way Ctrl-C does.

`timeout`, systemd, Kubernetes and CI runners send SIGTERM; a closed terminal or SSH session sends
SIGHUP. Python's default for both is to die at once: the run stayed `running`, a launched engine
lost its clean stop, and nothing said how to continue. Here either signal takes Ctrl-C's path (the
event loop's own SIGINT handler cancels the run, which is then marked interrupted, the engine
stopped and the `--resume` command printed) and the process exits 128 + the signal's number (143,
129; Ctrl-C 130). A second SIGTERM or SIGHUP exits at once: the records are flushed per line, so the
run directory stays readable (its header says `running`, shown as incomplete, and it resumes).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType

__all__ = ["handle_stop_signals", "interrupt_exit_code", "interrupt_name"]

_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
_received: list[int] = []


def interrupt_exit_code() -> int:
    """128 + the first stop signal received (130 when none: Ctrl-C)."""
    return 128 + (_received[0] if _received else int(signal.SIGINT))


def interrupt_name() -> str:
    """What stopped the run, as the message names it."""
    return signal.Signals(_received[0]).name if _received else "Ctrl-C"


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    if len(_received) > 1:
        # the second one: no clean-up (the first is still running it); the run dir stays readable
        with contextlib.suppress(OSError):
            os.write(2, f"\n{signal.Signals(signum).name} again: exiting now; the partial run is kept and "
                        "`rigbench run --resume RUN_DIR` continues it.\n".encode())
        os._exit(128 + _received[0])
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)  # the running event loop's (cancels the run) or Python's default (raises)
    else:
        raise KeyboardInterrupt  # SIGINT ignored (a background job): stop all the same


@contextlib.contextmanager
def handle_stop_signals() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP act as Ctrl-C (main thread only; elsewhere nothing changes)."""
    _received.clear()
    try:
        # a signal already ignored stays so (`nohup rigbench run ...` must survive the hang-up)
        previous = {s: signal.signal(s, _as_interrupt) for s in _STOP_SIGNALS
                    if signal.getsignal(s) is not signal.SIG_IGN}
    except ValueError:  # not the main thread (an embedding program): leave its handlers alone
        yield
        return
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        sys.stderr.flush()
