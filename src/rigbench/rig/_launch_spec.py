"""How a rig is started: a typed launch spec per engine, a verbatim command or container, or an
endpoint that is already running (those three in `rig/_verbatim.py`). `argv_for(spec)` turns a spec
into the exact argv to spawn.

Each engine's typed spec and its command-line builder live in its module under `rig/engines/`,
with the flag spellings read from the engine itself (docs/engines.md names the versions). This
module names no engine: `LaunchSpec` (a plan's `launch:`) looks its `kind` up among the engines
registered when it is validated, so an engine added with `register_engine` is a plan-file kind
with no edit here. It asks the registry, so no engine's code imports it (an engine builds its own
command with its `command(spec)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import PlainValidator, SerializeAsAny, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from rigbench.errors import UsageError
from rigbench.rig._spec import EngineSpec, LaunchCommand, Spec
from rigbench.rig._verbatim import CommandLaunch, ContainerLaunch, EndpointSpec, verbatim_command
from rigbench.rig.engines._registry import engine_problem, get_engine, known_engines

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
        return verbatim_command(spec)
    if isinstance(spec, EngineSpec):
        return get_engine(spec.kind).command(spec)
    raise TypeError(f"not a launch spec: {type(spec).__name__}")
