"""One rig spec, opened: `open_rig(spec)` launches or attaches, `describe_rig(spec)` says what run.json records.

`RigSpec` is what `RunConfig.rig` holds: the embedded rig, a launch spec (an engine's typed spec, a
command or a container), or an endpoint that is already running, told apart by `kind`. It is
validated once, by the plan's models (a plan file's rig, or `rigbench run`'s flags as a one-rig plan).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rigbench.client import redact_url
from rigbench.rig._launch_spec import CommandLaunch, EndpointSpec
from rigbench.rig._rig import AttachedRig, LaunchedRig
from rigbench.rig._spec_rig import launched_rig
from rigbench.rig.engines._llamacpp._embedded import EmbeddedRig, prepare_llamacpp_rig
from rigbench.rig.engines._spec import EngineSpec

__all__ = ["RigSpec", "check_rig", "describe_rig", "open_rig", "size_rig"]

# The embedded rig, an endpoint, or a launch spec (an engine's typed spec, a command, a container: what
# rigbench.rig.LaunchSpec validates); each has a `kind`.
RigSpec = EmbeddedRig | EndpointSpec | EngineSpec | CommandLaunch


def open_rig(spec: RigSpec, log_path: Path, *, api_key: str | None = None,
             note: Callable[[str], None] = lambda msg: None, build_progress: Any = None) -> LaunchedRig | AttachedRig:
    """The rig `spec` describes, ready to `start()`: attached to its endpoint, or launched (engine found
    or built, model fetched) with its log at `log_path`."""
    if isinstance(spec, EndpointSpec):
        return AttachedRig(spec.base_url, model=spec.model, api_key=api_key)
    if isinstance(spec, EmbeddedRig):
        return prepare_llamacpp_rig(spec.config(), log_path, build_progress=build_progress, note=note)
    return launched_rig(spec, log_path, api_key=api_key, note=note, build_progress=build_progress)


def describe_rig(spec: RigSpec) -> dict[str, Any]:
    """The rig as run.json's `plan.rig` records it; a resume must match it (pinned by
    tests/unit/test_rig_description.py, so runs started by older versions still resume)."""
    if isinstance(spec, EndpointSpec):
        return {"mode": "attach", "endpoint": redact_url(spec.base_url).rstrip("/"), "model": spec.model}
    if isinstance(spec, EmbeddedRig):
        return spec.describe()
    return {"mode": "launched", "engine": spec.kind, "spec": spec.model_dump(mode="json")}


def check_rig(spec: RigSpec) -> None:
    """Fail before anything starts on what the spec alone can tell (a local model file that is missing)."""
    if isinstance(spec, EmbeddedRig):
        spec.check()


def size_rig(spec: RigSpec, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> RigSpec:
    """`spec` with the context and slots it leaves out sized for these (input, output) token shapes
    and concurrency levels (only the embedded rig sizes itself; a launch spec is taken as given)."""
    return spec.sized(shapes, concurrency) if isinstance(spec, EmbeddedRig) else spec
