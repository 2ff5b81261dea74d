"""A `LaunchedRig` from a launch spec: an engine's typed spec (what an engine with nothing of its own to
prepare returns from `Engine.open`, handing itself in), a command or a container.

The argv is exactly the engine's `command(spec)` (a command as given); readiness is the engine adapter's
health path. The caller hands the engine in: this module asks no registry. A
container rig is stopped with `<docker|podman> stop NAME`: killing the `docker run` client alone
would leave the container serving (and holding the GPU).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rigbench.errors import RigStartError, UsageError
from rigbench.records import StartupTiming
from rigbench.rig._fingerprint import ModelInfo
from rigbench.rig._process import free_port
from rigbench.rig._rig import LaunchedRig, RigEngine
from rigbench.rig._verbatim import CommandLaunch, ContainerLaunch, EndpointSpec, verbatim_command

__all__ = ["CommandRig", "ContainerRig", "launched_rig"]

# Any OpenAI-compatible server answers this once it is up; used when the engine is not known.
_GENERIC_HEALTH = "/v1/models"
_GENERIC_START_TIMEOUT_S = 300.0


class CommandRig(LaunchedRig):
    """A rig started from its launch spec's argv; its engine may only be known once it answers (a verbatim
    command: told apart among its candidates, `LaunchedRig.start`)."""


# `docker run` / `podman run` exit codes that mean the container runtime failed, not the engine
# (docker run reference, "Exit status").
_RUNTIME_EXIT = {125: "the container runtime itself failed (daemon not running, image not found, a name or "
                      "port already in use, or a bad `run` option)",
                 126: "the container's command could not be invoked (not executable)",
                 127: "the container's command was not found in the image"}


class ContainerRig(CommandRig):
    def __init__(self, argv: list[str], *, container_name: str | None, **kw: Any) -> None:
        super().__init__(argv, **kw)
        self.container_name = container_name

    async def start(self) -> StartupTiming:
        try:
            return await super().start()
        except RigStartError as e:
            code = self.process.exit_code()
            tool = Path(self.argv[0]).name if self.argv else "docker"
            if code in _RUNTIME_EXIT:
                # "unknown exited 125" named neither the container runtime nor what 125 means
                _, _, rest = str(e).partition("\n")
                raise RigStartError(f"`{tool} run` exited with code {code}: {_RUNTIME_EXIT[code]}; the engine in "
                                    f"the container never started. See the log below.\n{rest}") from e
            raise

    async def stop(self) -> None:
        if self.container_name:
            tool = self.argv[0] if self.argv and Path(self.argv[0]).name in ("docker", "podman") else "docker"
            with self.process.log_path.open("ab") as log:
                # best effort: a container that already exited makes `stop` fail, which is fine
                try:
                    subprocess.run([tool, "stop", self.container_name], stdout=log, stderr=subprocess.STDOUT,
                                   timeout=60, check=False)
                except (OSError, subprocess.TimeoutExpired) as e:
                    log.write(f"rigbench: `{tool} stop {self.container_name}` failed: {e}\n".encode())
        await super().stop()


def launched_rig(spec: Any, log_path: Path, *, engine: RigEngine | None, api_key: str | None = None,
                 candidates: Sequence[RigEngine] = ()) -> LaunchedRig:
    """The rig that `spec` starts as its argv says, nothing prepared first; a free port is chosen when the
    spec names none. `engine`: the engine that launches it (`Engine.open` passes itself); None only for a
    command given verbatim that names no engine, told apart among `candidates` once it answers."""
    if isinstance(spec, EndpointSpec):
        raise UsageError(f"{spec.base_url} is an already-running endpoint: attach to it, do not launch it.")
    if isinstance(spec, CommandLaunch):  # a container too
        cmd = verbatim_command(spec)
    elif engine is not None:
        if spec.port is None:
            spec = spec.model_copy(update={"port": free_port(spec.host)})
        cmd = engine.command(spec)
    else:
        raise TypeError(f"launched_rig({type(spec).__name__}): pass the engine that launches it "
                        "(engine=self in Engine.open; docs/engines.md, 'Adding an engine')")
    health = engine.adapter().health_path if engine else _GENERIC_HEALTH
    if isinstance(spec, ContainerLaunch) and not spec.container_name:
        raise UsageError("a container rig needs `--name NAME` in its command so rigbench can stop the "
                         f"container afterwards (`docker stop NAME`); got: {' '.join(spec.argv)}")
    served = spec.model if isinstance(spec, CommandLaunch) else spec.served_name
    model = ModelInfo(path=getattr(spec, "model", None), served_name=served,
                      source=f"as given to {engine.name if engine else 'unknown'}")
    common: dict[str, Any] = {"engine": engine, "candidates": candidates, "port": int(spec.port),
                              "log_path": log_path, "model": model, "host": spec.host, "health_path": health,
                              "api_key": api_key, "env": cmd.env or None,
                              "start_timeout_s": engine.start_timeout_s if engine else _GENERIC_START_TIMEOUT_S}
    rig: LaunchedRig
    if isinstance(spec, ContainerLaunch):
        rig = ContainerRig(cmd.argv, container_name=spec.container_name, **common)
    else:
        rig = CommandRig(cmd.argv, **common)
    return rig
