"""Run the emulator in its own process: the set-up for comparing client stamps with the truth.

In another process the emulator's writes are not delayed by the client's event loop (nor the
client's reads by the emulator), and both stamp with `perf_counter_ns` = CLOCK_MONOTONIC on
Linux, one clock for the whole machine, so the stamps compare directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from types import TracebackType

from rigbench.errors import SetupError
from rigbench.testing._script import EmulatorScript
from rigbench.testing._truth import RequestTruth

__all__ = ["EmulatorProcess"]


class EmulatorProcess:
    """`with EmulatorProcess(script) as emu: ... emu.url ... emu.fetch_truth()`."""

    def __init__(
        self,
        script: EmulatorScript | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        uvloop: bool = False,
    ) -> None:
        self.script = script or EmulatorScript()
        self.host = host
        self.port = port
        self.uvloop = uvloop
        self._proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> EmulatorProcess:
        argv = [
            sys.executable,
            "-m",
            "rigbench.testing",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--script-json",
            self.script.model_dump_json(),
        ]
        if self.uvloop:
            argv.append("--uvloop")
        self._proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self._proc.stdout is not None
        try:
            line = self._proc.stdout.readline()
        except BaseException:  # Ctrl-C, a test's timeout: `with` never got the emulator, so stop it here
            self.stop()
            raise
        if not line.startswith("listening "):
            err = self._proc.stderr.read() if self._proc.stderr else ""
            self.stop()
            raise SetupError(
                f"the emulator did not start: {' '.join(argv[:6])} printed {line!r} {err[-800:]}"
            )
        self.port = int(line.rsplit(":", 1)[1].split("/")[0])
        return self

    def fetch_truth(self) -> list[RequestTruth]:
        with urllib.request.urlopen(self.root + "/emulator/truth", timeout=30) as r:
            return [RequestTruth.model_validate(t) for t in json.loads(r.read())]

    def reset(self) -> None:
        req = urllib.request.Request(self.root + "/emulator/reset", data=b"{}", method="POST")
        with urllib.request.urlopen(req, timeout=10):
            pass

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            for f in (self._proc.stdout, self._proc.stderr):
                if f is not None:
                    f.close()
            self._proc = None

    def __enter__(self) -> EmulatorProcess:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
