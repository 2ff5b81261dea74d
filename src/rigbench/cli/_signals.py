"""Ctrl-C, SIGTERM and SIGHUP stop rigbench the same way, within seconds, whatever it is doing.

`timeout`, systemd, Kubernetes and CI runners send SIGTERM; a closed terminal or SSH session sends
SIGHUP. Python's default for both is to die at once: the run stayed `running`, a launched engine
lost its clean stop, and nothing said how to continue. Here each of the three takes one path and the
process exits 128 + the signal's number (130, 143, 129):

- While the event loop runs (`run_stoppable`), the signal asks the loop to cancel the run: the run is
  then marked interrupted, the engine stopped and the `--resume` command printed. The cancel is
  handed to the loop (not done inside the handler), so it lands at an `await`, where clean-up runs.
- When the loop does not take the cancel within `GRACE_S` (its thread is stuck in work that does not
  yield: building a huge prompt, parsing a huge file, a blocking read), the signal is delivered to
  that thread again and raises KeyboardInterrupt inside the stuck work, which unwinds through the
  run's clean-up the same way.
- Outside the loop (loading a plan or a trace, rendering reports), the signal raises
  KeyboardInterrupt at once, as Ctrl-C always did.
- Whatever happens, the process exits within `HARD_S` of the first signal: past it (clean-up itself
  hung) it exits at once, saying so. So does a second signal. The records are flushed per line, so the
  run directory stays readable (its header may say `running`: shown as incomplete) and resumes.
- What no Python program can stop: one C call that holds the interpreter lock (no handler, no thread
  runs until it returns). rigbench bounds what it hands such calls (a trace line, a prompt's length, a
  file's size: rigbench.inputs), so none runs for long.

A signal already ignored stays ignored (`nohup rigbench run ...` survives the hang-up).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

from rigbench.client import run as run_loop

__all__ = ["GRACE_S", "HARD_S", "handle_stop_signals", "interrupt_exit_code", "interrupt_name",
           "run_stoppable", "stopped"]

T = TypeVar("T")

_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
# The loop must take the cancel within this long, else the signal raises in the work that holds it.
GRACE_S = 3.0
# The process is gone this long after the first signal, clean-up done or not (a launched engine has a
# stop of 10 + 5 s at most, and dies with rigbench through its death signal anyway).
HARD_S = 30.0


class _State:
    """What the handler, the loop and the watchdog thread share (guarded by `lock`: reentrant, because the
    handler runs in the main thread between any two of its bytecodes, holding the lock or not)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.received: list[int] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.main: asyncio.Task[Any] | None = None
        self.phase = "idle"  # idle -> asked (the loop has the cancel to do) -> cancelled | raised
        self.raise_next = False  # the watchdog's own delivery of the signal: raise, do not exit
        self.taken = threading.Event()  # set when the loop ran the cancel
        self.main_thread = threading.main_thread().ident


_state = _State()


def interrupt_exit_code() -> int:
    """128 + the first stop signal received (130 when none: Ctrl-C)."""
    return 128 + (_state.received[0] if _state.received else int(signal.SIGINT))


def stopped() -> bool:
    """Whether a stop signal has been received (since `handle_stop_signals` was entered)."""
    return bool(_state.received)


def interrupt_name() -> str:
    """What stopped the run, as the message names it."""
    return ("Ctrl-C" if not _state.received or _state.received[0] == signal.SIGINT
            else signal.Signals(_state.received[0]).name)


def _say(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, text.encode())


def _exit_now(why: str) -> None:
    _say(f"\n{why}: exiting now; the partial run is kept and `rigbench run --resume RUN_DIR` continues it.\n")
    os._exit(interrupt_exit_code())


def _cancel() -> None:
    """In the loop's thread: cancel the run, unless the watchdog has already raised in it."""
    with _state.lock:
        if _state.phase != "asked":
            return
        _state.phase = "cancelled"
        _state.taken.set()
        main = _state.main
    if main is not None and not main.done():
        main.cancel()


def _watchdog(signum: int) -> None:
    """Raise in the loop's thread if it did not take the cancel within GRACE_S; exit at HARD_S whatever."""
    deadline = time.monotonic() + HARD_S
    if not _state.taken.wait(GRACE_S):
        with _state.lock:
            stuck = _state.phase == "asked"
            if stuck:
                _state.phase, _state.raise_next = "raised", True
        if stuck and _state.main_thread is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pthread_kill(_state.main_thread, signum)
    threading.Event().wait(max(0.0, deadline - time.monotonic()))
    _exit_now(f"{signal.Signals(signum).name} {HARD_S:.0f} s ago and the run has not stopped")


def _on_stop(signum: int, frame: FrameType | None) -> None:
    with _state.lock:
        own = _state.raise_next
        _state.raise_next = False
    if own:  # the watchdog's delivery: raise inside the work that kept the loop from the cancel
        raise KeyboardInterrupt
    _state.received.append(signum)
    if len(_state.received) > 1:  # the second one: no clean-up (the first is still running it)
        _exit_now(f"{signal.Signals(signum).name} again")
    threading.Thread(target=_watchdog, args=(signum,), name="rigbench-stop-watchdog", daemon=True).start()
    with _state.lock:
        loop = _state.loop
        if loop is not None and loop.is_running():
            _state.phase = "asked"
    if loop is not None and loop.is_running():
        loop.call_soon_threadsafe(_cancel)
        return
    raise KeyboardInterrupt  # no loop running: stop the code that runs now


@contextlib.contextmanager
def handle_stop_signals() -> Iterator[None]:
    """While inside, SIGINT, SIGTERM and SIGHUP stop rigbench as described above (main thread only;
    elsewhere nothing changes)."""
    global _state
    _state = _State()
    try:
        # a signal already ignored stays so (`nohup rigbench run ...` must survive the hang-up)
        previous = {s: signal.signal(s, _on_stop) for s in _STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN}
    except ValueError:  # not the main thread (an embedding program): leave its handlers alone
        yield
        return
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        sys.stderr.flush()


async def _registered(main: Coroutine[Any, Any, T]) -> T:
    with _state.lock:
        _state.loop, _state.main = asyncio.get_running_loop(), asyncio.current_task()
    try:
        return await main
    finally:
        with _state.lock:
            _state.loop = _state.main = None


def run_stoppable(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on rigbench's event loop (`client.run`) so that a stop signal cancels it; raises
    KeyboardInterrupt when a signal stopped it (the caller says so and exits `interrupt_exit_code()`)."""
    try:
        return run_loop(_registered(main))
    except asyncio.CancelledError:
        if _state.received:
            raise KeyboardInterrupt from None
        raise
