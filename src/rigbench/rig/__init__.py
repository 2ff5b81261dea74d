"""Rigs: launching or attaching to an engine, fingerprinting it, and the embedded default."""

from rigbench.rig._build import LLAMA_CPP_VERSION, build_llama_server, find_llama_server
from rigbench.rig._embedded import LlamaCppConfig, llamacpp_argv, prepare_llamacpp_rig
from rigbench.rig._fingerprint import (
    EngineBinary,
    Fingerprint,
    HostInfo,
    MemoryBandwidth,
    ModelInfo,
    host_info,
)
from rigbench.rig._info import RigInfo
from rigbench.rig._models import (
    EMBEDDED_MODEL,
    HubFile,
    LocalFile,
    ModelSource,
    WheelFile,
    model_source_from_spec,
)
from rigbench.rig._process import EngineProcess, free_port, port_in_use
from rigbench.rig._rig import AttachedRig, LaunchedRig, StartupTiming
from rigbench.rig._smoke import ensure_llama_server

__all__ = [
    "EMBEDDED_MODEL",
    "LLAMA_CPP_VERSION",
    "AttachedRig",
    "EngineBinary",
    "EngineProcess",
    "Fingerprint",
    "HostInfo",
    "HubFile",
    "LaunchedRig",
    "LlamaCppConfig",
    "LocalFile",
    "MemoryBandwidth",
    "ModelInfo",
    "ModelSource",
    "RigInfo",
    "StartupTiming",
    "WheelFile",
    "build_llama_server",
    "ensure_llama_server",
    "find_llama_server",
    "free_port",
    "host_info",
    "llamacpp_argv",
    "model_source_from_spec",
    "port_in_use",
    "prepare_llamacpp_rig",
]
