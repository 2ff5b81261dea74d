"""A rig given as is, with no engine asked: a command line or a container run verbatim, or an endpoint
that is already running. Engines' code (`launched_rig`) imports these, so this module looks no engine up
(`rig/_launch_spec.py`, above the engines, validates a plan's `launch:` against the registry)."""

from __future__ import annotations

import shlex
from typing import Any, Literal

from pydantic import field_validator

from rigbench.client import redact_url
from rigbench.errors import UsageError
from rigbench.rig._spec import LaunchCommand, Spec

__all__ = ["CommandLaunch", "ContainerLaunch", "EndpointSpec", "verbatim_command"]


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

    def describe(self) -> dict[str, Any]:
        """As run.json's `plan.rig` records it (a resume compares it)."""
        return {"mode": "launched", "engine": self.kind, "spec": self.model_dump(mode="json")}


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

    def describe(self) -> dict[str, Any]:
        """As run.json's `plan.rig` records it (a resume compares it); credentials in the URL removed."""
        return {"mode": "attach", "endpoint": redact_url(self.base_url).rstrip("/"), "model": self.model}


def verbatim_command(spec: CommandLaunch) -> LaunchCommand:
    """The argv of a command or container given verbatim (nothing in the environment)."""
    if not spec.argv:
        raise UsageError(f"the {spec.kind} rig has an empty command: give the full command line to run")
    return LaunchCommand(list(spec.argv), {})
