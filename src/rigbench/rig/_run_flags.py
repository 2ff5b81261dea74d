"""`rigbench run`'s rig flags and the rig spec they make: an endpoint to attach to, or what the named
engine makes of them.

The flags become the same rig section a plan file writes (`embedded:`, `launch:`, `endpoint:`),
validated by the plan's models. Each engine reads the flags itself (`Engine.rig_from_run_flags`, in
its package), so an installed engine is launched by `--engine NAME` with no code here; a spec made
from flags is sized for the run's speed shapes and concurrency (`size_flag_rig`, the spec's own
`sized_for_run`), as the embedded rig sizes itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rigbench.errors import UsageError
from rigbench.rig._launch_spec import EndpointSpec
from rigbench.rig._spec import EngineSpec
from rigbench.rig.engines._registry import get_engine
from rigbench.rig.engines._run_flags import Flag, RigFlags

__all__ = ["Flag", "RigFlags", "check_rig_flags", "rig_from_flags", "size_flag_rig"]


def check_rig_flags(f: RigFlags) -> None:
    """Flags that cannot go together, and an engine that is not known."""
    launch_only = f.launch_only_given()
    if f.endpoint and launch_only:
        raise UsageError(f"--endpoint attaches to a running server; {'/'.join(launch_only)} only apply when rigbench "
                         "launches the server. Use one or the other.")
    if not f.endpoint:
        get_engine(f.engine)  # unknown: the error lists the engines there are


def rig_from_flags(f: RigFlags) -> dict[str, Any]:
    """The plan rig section the flags make: `endpoint:`, or the engine's (`launch:` or `embedded:`)."""
    check_rig_flags(f)
    if f.endpoint:
        return {"endpoint": EndpointSpec(base_url=f.endpoint, model=f.model)}
    engine = get_engine(f.engine)
    section = engine.rig_from_run_flags(f)
    if section is None:
        raise UsageError(f"--engine {f.engine!r}: `rigbench run` does not launch {engine.name}. Start the server "
                         "yourself and attach with --endpoint, or launch it from a plan rig (docs/plans.md).")
    return section


def size_flag_rig(spec: Any, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> Any:
    """A launch spec made from flags, sized for the validated speed settings by its engine's spec (the
    embedded rig sizes itself later, as a plan's does); any other spec as it is."""
    return spec.sized_for_run(shapes, concurrency) if isinstance(spec, EngineSpec) else spec
