"""How a rig is started: a typed launch spec per engine, a verbatim command or container, or an
endpoint that is already running. `argv_for(spec)` turns a spec into the exact argv to spawn.

Each engine's typed spec and its command-line builder live in its module under `rig/engines/`,
with the flag spellings read from the engine itself (docs/engines.md names the versions).
"""

from __future__ import annotations

import shlex
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from rigbench.errors import UsageError
from rigbench.rig.engines._llamacpp import LlamaCppLaunch
from rigbench.rig.engines._ollama import OllamaLaunch
from rigbench.rig.engines._registry import get_engine
from rigbench.rig.engines._sglang import SGLangLaunch, SGLangSpeculative
from rigbench.rig.engines._spec import EngineSpec, LaunchCommand, Spec
from rigbench.rig.engines._vllm import VLLM_API_SERVER_MODULE, VLLMLaunch

__all__ = [
    "VLLM_API_SERVER_MODULE",
    "CommandLaunch",
    "ContainerLaunch",
    "EndpointSpec",
    "LaunchCommand",
    "LaunchSpec",
    "LlamaCppLaunch",
    "OllamaLaunch",
    "SGLangLaunch",
    "SGLangSpeculative",
    "VLLMLaunch",
    "argv_for",
    "command_for",
]


class CommandLaunch(Spec):
    """A command the user gives verbatim (e.g. `vllm serve ...` with flags rigbench does not model)."""

    kind: Literal["command"] = "command"
    argv: list[str]
    host: str = "127.0.0.1"
    port: int  # where the command will listen; rigbench cannot guess it from arbitrary flags
    engine: str | None = None  # None: detect from the endpoint once it is up
    model: str | None = None  # the name requests use; None: the first of /v1/models

    @field_validator("argv", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return shlex.split(v) if isinstance(v, str) else v


class ContainerLaunch(CommandLaunch):
    """A container command given verbatim (`docker run ...`, `podman run ...`).

    Stopping it must stop the container, not only the client process: `container_name` is the
    `--name` it was given, if any.
    """

    kind: Literal["container"] = "container"  # type: ignore[assignment]

    @property
    def container_name(self) -> str | None:
        for i, arg in enumerate(self.argv):
            if arg == "--name" and i + 1 < len(self.argv):
                return self.argv[i + 1]
            if arg.startswith("--name="):
                return arg.split("=", 1)[1]
        return None


class EndpointSpec(Spec):
    """A server that is already running; rigbench attaches and never starts or stops it."""

    kind: Literal["endpoint"] = "endpoint"
    base_url: str  # OpenAI base URL, e.g. http://host:8000/v1
    engine: str | None = None  # None: detect
    model: str | None = None


LaunchSpec = Annotated[
    VLLMLaunch | SGLangLaunch | LlamaCppLaunch | OllamaLaunch
    | CommandLaunch | ContainerLaunch | EndpointSpec,
    Field(discriminator="kind"),
]


def argv_for(spec: Any) -> list[str]:
    """The exact argv that starts `spec` (see `command_for` for the environment it also needs)."""
    return command_for(spec).argv


def command_for(spec: Any) -> LaunchCommand:
    if isinstance(spec, EndpointSpec):
        raise UsageError(f"the rig at {spec.base_url} is an already-running endpoint: rigbench does not "
                         "launch it. Give a launch spec or a command to have rigbench start the server.")
    if isinstance(spec, CommandLaunch):  # ContainerLaunch included
        if not spec.argv:
            raise UsageError(f"the {spec.kind} rig has an empty command: give the full command line to run")
        return LaunchCommand(list(spec.argv), {})
    if isinstance(spec, EngineSpec):
        return get_engine(spec.kind).command(spec)
    raise TypeError(f"not a launch spec: {type(spec).__name__}")
