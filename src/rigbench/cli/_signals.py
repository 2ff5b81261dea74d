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
- One C call that holds the interpreter lock (a huge `sum`, a regular expression's C loop, a C
  library's parser) lets no Python handler and no Python thread run until it returns. For that case a
  backstop process (`_BACKSTOP`, started once per process, asleep) learns of the signal from the C
  level (`faulthandler` writes into its pipe from inside the signal, no interpreter lock needed) and,
  if rigbench is still alive `HARD_S + BACKSTOP_MARGIN_S` after it, says so and kills it (SIGKILL:
  exit 137). It stands down when the signal was taken (leaving `handle_stop_signals`) and exits with
  rigbench. rigbench also bounds what it hands such calls (a trace line, a prompt's length, a file's size: rigbench.inputs).

A signal already ignored stays ignored (`nohup rigbench run ...` survives the hang-up).
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

from rigbench.client import run as run_loop

__all__ = ["BACKSTOP_MARGIN_S", "GRACE_S", "HARD_S", "handle_stop_signals", "interrupt_exit_code", "interrupt_name",
           "run_stoppable", "stopped"]

T = TypeVar("T")

_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
# The loop must take the cancel within this long, else the signal raises in the work that holds it.
GRACE_S = 3.0
# The process is gone this long after the first signal, clean-up done or not (a launched engine has a
# stop of 10 + 5 s at most, and dies with rigbench through its death signal anyway).
HARD_S = 30.0
# The backstop kills the process this long after the hard exit was due (it only acts when that could not run).
# The hard exit is a thread woken by a timer: on a loaded host it can run seconds late, and a SIGKILL before it
# would lose its exit code and message, so the margin leaves it 5 s.
BACKSTOP_MARGIN_S = 5.0

# The backstop: `python -I -S -c _BACKSTOP PID SECONDS`, stdin the read end of a pipe whose write end only
# the C signal handler writes to (faulthandler's dump of the signalled thread: any byte is a stop signal).
# It watches rigbench through a pidfd (no mistaking a reused PID), exits when rigbench does, and kills it
# SECONDS after the first signal if it is still there. It ignores the stop signals itself: a terminal's
# Ctrl-C reaches the whole process group, and it must outlive a rigbench that did not take it.
_BACKSTOP = '''
import os, select, signal, sys, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
pid, after = int(sys.argv[1]), float(sys.argv[2])
try:
    rigbench = os.pidfd_open(pid)
except OSError:
    sys.exit(0)
if os.getppid() != pid:
    sys.exit(0)
deadline = None
while deadline is None or time.monotonic() < deadline:
    wait = None if deadline is None else max(0.0, deadline - time.monotonic())
    ready = select.select([rigbench, 0], [], [], wait)[0]
    if rigbench in ready:
        sys.exit(0)
    if 0 in ready:
        if not os.read(0, 65536):
            sys.exit(0)
        if deadline is None:
            deadline = time.monotonic() + after
try:
    os.write(2, ("\\nA stop signal came %.0f s ago and rigbench has not stopped (one call holds Python's interpreter "
                 "lock, so no handler runs): killed; the partial run is kept and `rigbench run --resume RUN_DIR` "
                 "continues it.\\n" % after).encode())
except OSError:
    pass
signal.pidfd_send_signal(rigbench, signal.SIGKILL)
'''


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


class _Backstop:
    """This process's backstop (one per process, started on first use): its PID and the pipe's write end."""

    def __init__(self) -> None:
        self.owner: int | None = None  # the PID that started it (a forked child has none of its own)
        self.pid: int | None = None
        self.fd: int | None = None
        self.registered: tuple[int, ...] = ()  # the signals faulthandler now reports to it


_backstop = _Backstop()


def _backstop_pipe() -> int | None:
    """The write end of the backstop's pipe, starting the backstop when this process has none running
    (None where it cannot run: no pidfd, no interpreter to start)."""
    b = _backstop
    if b.owner == os.getpid() and b.pid is not None and b.fd is not None:
        try:
            gone = os.waitpid(b.pid, os.WNOHANG)[0] != 0
        except ChildProcessError:
            gone = True
        if not gone:
            return b.fd
        os.close(b.fd)
        b.pid = b.fd = None
    if not (hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal") and sys.executable):
        return None
    r, w = os.pipe()  # both ends close on exec: only the backstop's stdin is passed on
    try:
        pid = os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", _BACKSTOP, str(os.getpid()),
                                              str(HARD_S + BACKSTOP_MARGIN_S)], os.environ,
                             file_actions=[(os.POSIX_SPAWN_DUP2, r, 0),
                                           (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
    except OSError:
        os.close(w)
        return None
    finally:
        os.close(r)
    os.set_blocking(w, False)  # written from inside a signal handler: a full pipe must not block it
    b.owner, b.pid, b.fd = os.getpid(), pid, w
    return w


def _arm_backstop(signals: tuple[int, ...]) -> None:
    fd = _backstop_pipe()
    if fd is None:
        return
    for s in signals:  # on top of Python's handler, which it calls next (chain)
        faulthandler.register(s, file=fd, all_threads=False, chain=True)
    _backstop.registered = signals


def _disarm_backstop() -> None:
    for s in _backstop.registered:
        faulthandler.unregister(s)
    _backstop.registered = ()


def _forget_backstop_in_child() -> None:
    """After a fork: the child's signals are not rigbench's (its parent's backstop must not hear of them)."""
    _disarm_backstop()
    if _backstop.fd is not None:
        with contextlib.suppress(OSError):
            os.close(_backstop.fd)
    _backstop.owner = _backstop.pid = _backstop.fd = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_backstop_in_child)


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
    _arm_backstop(tuple(previous))  # after Python's handler: faulthandler chains to what it finds
    try:
        yield
    finally:
        _disarm_backstop()
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
