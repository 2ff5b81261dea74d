"""One rig spec, opened: `open_rig(spec)` attaches, or asks the spec's engine to launch it.

`RigSpec` is what `RunConfig.rig` holds: the embedded rig, a launch spec (an engine's typed spec, a
command or a container), or an endpoint that is already running, told apart by `kind`. It is
validated once, by the plan's models (a plan file's rig, or `rigbench run`'s flags as a one-rig plan).
Each spec says what run.json records of it (`describe`), what it can check before anything starts
(`check`) and how it is sized for the run (`sized`); the engine that launches it is asked for the rig
(`Engine.open`), so this module names no engine. It is the one place of the generic rig code that asks
the registry: it picks the engine and hands it (or, for an endpoint or a command that names none, every
registered engine to tell it apart) to the rig; engines import the rig code, never this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rigbench.rig._launcher import launched_rig
from rigbench.rig._rig import AttachedRig, LaunchedRig
from rigbench.rig._spec import EngineSpec
from rigbench.rig._verbatim import CommandLaunch, EndpointSpec
from rigbench.rig.engines import EmbeddedRig
from rigbench.rig.engines._registry import get_engine, known_engines

__all__ = ["EmbeddedRig", "RigSpec", "check_rig", "describe_rig", "open_rig", "size_rig"]

# The embedded rig, an endpoint, or a launch spec (an engine's typed spec, a command, a container: what
# rigbench.rig.LaunchSpec validates); each has a `kind`.
RigSpec = EmbeddedRig | EndpointSpec | EngineSpec | CommandLaunch


def open_rig(spec: RigSpec, log_path: Path, *, api_key: str | None = None,
             note: Callable[[str], None] = lambda msg: None, build_progress: Any = None) -> LaunchedRig | AttachedRig:
    """The rig `spec` describes, ready to `start()`: attached to its endpoint, a command started as given,
    or what the spec's engine launches (engine found or built, model fetched) with its log at `log_path`."""
    if isinstance(spec, EndpointSpec):
        return AttachedRig(spec.base_url, model=spec.model, candidates=known_engines(), api_key=api_key)
    if isinstance(spec, CommandLaunch):  # a container too; an engine it names is looked up, else told apart
        return launched_rig(spec, log_path, engine=get_engine(spec.engine) if spec.engine not in (None, "unknown") else None,
                            candidates=known_engines(), api_key=api_key)
    return get_engine(spec.engine_name).open(spec, log_path, api_key=api_key, note=note,
                                             build_progress=build_progress)


def describe_rig(spec: RigSpec) -> dict[str, Any]:
    """The rig as run.json's `plan.rig` records it; a resume must match it (pinned by
    tests/unit/test_rig_description.py, so runs started by older versions still resume)."""
    return spec.describe()


def check_rig(spec: RigSpec) -> None:
    """Fail before anything starts on what the spec alone can tell (a local model file that is missing)."""
    spec.check()


def size_rig(spec: RigSpec, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> RigSpec:
    """`spec` with the context and slots it leaves out sized for these (input, output) token shapes
    and concurrency levels (only the embedded rig sizes itself; a launch spec is taken as given)."""
    return spec.sized(shapes, concurrency)
