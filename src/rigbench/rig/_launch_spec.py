"""How a rig is started: a typed launch spec per engine, a verbatim command or container, or an
endpoint that is already running. `argv_for(spec)` turns a spec into the exact argv to spawn.

Each engine's typed spec and its command-line builder live in its module under `rig/engines/`,
with the flag spellings read from the engine itself (docs/engines.md names the versions). This
module names no engine: `LaunchSpec` (a plan's `launch:`) looks its `kind` up among the engines
registered when it is validated, so an engine added with `register_engine` is a plan-file kind
with no edit here.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import PlainValidator, SerializeAsAny, ValidationError, field_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from rigbench.client import redact_url
from rigbench.errors import UsageError
from rigbench.rig.engines._registry import engine_problem, get_engine, known_engines
from rigbench.rig.engines._spec import EngineSpec, LaunchCommand, Spec

__all__ = [
    "CommandLaunch",
    "ContainerLaunch",
    "EndpointSpec",
    "LaunchCommand",
    "LaunchSpec",
    "argv_for",
    "command_for",
    "launch_spec_types",
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


# Kinds that are not an engine: a command line given verbatim, and an already-running server
# (accepted here so that a plan can say it belongs under `endpoint:` instead).
_NOT_ENGINES: dict[str, type[Spec]] = {"command": CommandLaunch, "container": ContainerLaunch,
                                       "endpoint": EndpointSpec}


def launch_spec_types() -> dict[str, type[Spec]]:
    """`kind` -> launch-spec model: every engine registered now, then the verbatim kinds."""
    return {**{e.name: e.launch_spec for e in known_engines()}, **_NOT_ENGINES}


def _kinds_known() -> str:
    engines = ", ".join(e.name for e in known_engines())
    return (f"the engines registered now are {engines} (another is added by installing a package that "
            "declares one, or with rigbench.rig.engines.register_engine: docs/engines.md); `command` or "
            "`container` start a command line given verbatim")


def _kind_error(message: str, kind: Any) -> ValidationError:
    # a ValidationError raised in a validator keeps its locations, so the error points at `kind`
    return ValidationError.from_exception_data("LaunchSpec", [InitErrorDetails(
        type=PydanticCustomError("launch_kind", message), loc=("kind",), input=kind)])


def _validate_launch_spec(value: Any) -> Spec:
    types = launch_spec_types()
    if isinstance(value, Spec):  # built in code rather than read from a file
        if type(value) in types.values():
            return value
        raise PydanticCustomError("launch_spec_type", f"{type(value).__name__} is not the launch spec of a "
                                  f"registered engine; {_kinds_known()}")
    if not isinstance(value, Mapping):
        raise PydanticCustomError("launch_spec_type", f"a launch spec is a mapping with a `kind`, not a "
                                  f"{type(value).__name__}; {_kinds_known()}")
    kind = value.get("kind")
    if kind is None:
        raise _kind_error(f"a launch spec needs a `kind`; {_kinds_known()}", kind)
    if isinstance(kind, str) and kind not in types and engine_problem(kind):
        raise _kind_error(str(engine_problem(kind)), kind)
    if not isinstance(kind, str) or kind not in types:
        raise _kind_error(f"unknown launch kind {kind!r}; {_kinds_known()}", kind)
    return types[kind].model_validate(value)


# Validated against the registry at validation time, not a union fixed when this module was
# imported; serialized as the spec it holds (every field of that engine's model).
LaunchSpec = Annotated[SerializeAsAny[Spec], PlainValidator(_validate_launch_spec)]


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
