"""Rigs: launching or attaching to an engine, fingerprinting it, and the embedded default.

Nothing here names an engine: what one engine needs (llama.cpp's build, vLLM's venv, their launch
specs) is imported from its module under `rigbench.rig.engines`."""

from rigbench.rig._cache import cache_dir
from rigbench.rig._fingerprint import (
    EngineBinary,
    Fingerprint,
    HostInfo,
    MemoryBandwidth,
    ModelInfo,
    host_info,
)
from rigbench.rig._host import EngineRef, HostWatch, HostWindow, locate_engine
from rigbench.rig._info import RigInfo
from rigbench.rig._launch_spec import EndpointSpec, LaunchSpec
from rigbench.rig._launcher import launched_rig
from rigbench.rig._models import (
    EMBEDDED_MODEL,
    HubFile,
    LocalFile,
    ModelSource,
    WheelFile,
    model_source_from_spec,
)
from rigbench.rig._open import EmbeddedRig, RigSpec, check_rig, describe_rig, open_rig, size_rig
from rigbench.rig._process import EngineProcess, free_port, port_in_use
from rigbench.rig._rig import AttachedRig, LaunchedRig
from rigbench.rig._run_flags import Flag, RigFlags, check_rig_flags, rig_from_flags, size_flag_rig
from rigbench.rig._telemetry import TelemetrySampler

__all__ = [
    "EMBEDDED_MODEL",
    "AttachedRig",
    "EmbeddedRig",
    "EndpointSpec",
    "EngineBinary",
    "EngineProcess",
    "EngineRef",
    "Fingerprint",
    "Flag",
    "HostInfo",
    "HostWatch",
    "HostWindow",
    "HubFile",
    "LaunchSpec",
    "LaunchedRig",
    "LocalFile",
    "MemoryBandwidth",
    "ModelInfo",
    "ModelSource",
    "RigFlags",
    "RigInfo",
    "RigSpec",
    "TelemetrySampler",
    "WheelFile",
    "cache_dir",
    "check_rig",
    "check_rig_flags",
    "describe_rig",
    "free_port",
    "host_info",
    "launched_rig",
    "locate_engine",
    "model_source_from_spec",
    "open_rig",
    "port_in_use",
    "rig_from_flags",
    "size_flag_rig",
    "size_rig",
]
