"""A launched engine process: its own process group, its log captured, always stopped."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from rigbench.errors import PortInUseError, RigStartError

__all__ = ["EngineProcess", "free_port", "port_in_use"]

_LIVE: set[EngineProcess] = set()


def _stop_all_at_exit() -> None:
    for proc in list(_LIVE):
        proc.stop()


atexit.register(_stop_all_at_exit)


def _libc() -> object | None:
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return None


# Loaded in the parent: the child between fork and exec must not import or take locks.
_LIBC = _libc() if sys.platform == "linux" else None
_PR_SET_PDEATHSIG = 1


def _die_with_parent(sig: int) -> Callable[[], None]:
    """In the child, before exec: `sig` when rigbench dies, even by kill -9 (Linux prctl).

    The engine runs in its own session so Ctrl-C reaches rigbench first and rigbench stops it in
    order; without this, a rigbench killed outright would leave the engine serving forever.
    """
    def arm() -> None:
        if _LIBC is not None:
            _LIBC.prctl(_PR_SET_PDEATHSIG, sig)  # type: ignore[attr-defined]
    return arm


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


class EngineProcess:
    """Runs `argv` in a new session (process group), stdout+stderr appended to `log_path`."""

    def __init__(self, argv: list[str], log_path: Path, *, env: dict[str, str] | None = None,
                 death_signal: int = signal.SIGTERM, missing_hint: str = "Check the path.") -> None:
        self.argv = argv
        # what to do when the program is not there: the engine that starts it knows (how rigbench builds it)
        self.missing_hint = missing_hint
        self.log_path = log_path
        self._env = env
        # what the engine gets when rigbench dies without stopping it: SIGTERM lets an engine take
        # its own workers down (vLLM, SGLang); an engine whose graceful exit can hang gets SIGKILL
        self.death_signal = death_signal
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self, *, port: int | None = None, host: str = "127.0.0.1") -> None:
        if port is not None and port_in_use(port, host):
            raise PortInUseError(
                f"port {port} on {host} is already in use, so the engine cannot listen there.\n"
                f"  command: {self.command}\n"
                "Stop whatever holds it (`ss -ltnp | grep :PORT`), or pass another --port (or none, "
                "to pick a free one)."
            )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        try:
            self._proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env={**os.environ, **(self._env or {})},
                preexec_fn=_die_with_parent(self.death_signal) if _LIBC is not None else None,
            )
        except FileNotFoundError as e:
            raise RigStartError(f"cannot start the engine: {self.argv[0]} not found.\n  command: {self.command}\n"
                                f"{self.missing_hint}") from e
        except PermissionError as e:
            raise RigStartError(f"cannot start the engine: {self.argv[0]} is not executable.\n"
                                f"  command: {self.command}") from e
        finally:
            log.close()
        _LIVE.add(self)

    def exit_code(self) -> int | None:
        return self._proc.poll() if self._proc else None

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM the whole process group, then SIGKILL whatever is left."""
        proc = self._proc
        if proc is None:
            return
        _LIVE.discard(self)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        # children that outlived the leader
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
