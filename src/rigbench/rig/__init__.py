"""Rigs: launching or attaching to an engine, fingerprinting it, and the embedded default."""

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
from rigbench.rig._models import (
    EMBEDDED_MODEL,
    HubFile,
    LocalFile,
    ModelSource,
    WheelFile,
    model_source_from_spec,
)
from rigbench.rig._open import RigSpec, check_rig, describe_rig, open_rig, size_rig
from rigbench.rig._process import EngineProcess, free_port, port_in_use
from rigbench.rig._rig import AttachedRig, LaunchedRig
from rigbench.rig._run_flags import Flag, RigFlags, check_rig_flags, rig_from_flags, size_flag_rig
from rigbench.rig._spec_rig import launched_rig
from rigbench.rig._telemetry import TelemetrySampler
from rigbench.rig._traffic import check_traffic, requests_from_records
from rigbench.rig.engines._llamacpp._build import LLAMA_CPP_VERSION, build_llama_server, find_llama_server
from rigbench.rig.engines._llamacpp._embedded import (
    EmbeddedRig,
    LlamaCppConfig,
    llamacpp_argv,
    prepare_llamacpp_rig,
)
from rigbench.rig.engines._llamacpp._smoke import ensure_llama_server
from rigbench.rig.engines._vllm import VLLMLaunch
from rigbench.rig.engines._vllm._env import find_vllm, hf_copy_of_gguf, install_vllm, vllm_serve_argv

__all__ = [
    "EMBEDDED_MODEL",
    "LLAMA_CPP_VERSION",
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
    "LlamaCppConfig",
    "LocalFile",
    "MemoryBandwidth",
    "ModelInfo",
    "ModelSource",
    "RigFlags",
    "RigInfo",
    "RigSpec",
    "TelemetrySampler",
    "VLLMLaunch",
    "WheelFile",
    "build_llama_server",
    "cache_dir",
    "check_rig",
    "check_rig_flags",
    "check_traffic",
    "describe_rig",
    "ensure_llama_server",
    "find_llama_server",
    "find_vllm",
    "free_port",
    "hf_copy_of_gguf",
    "host_info",
    "install_vllm",
    "launched_rig",
    "llamacpp_argv",
    "locate_engine",
    "model_source_from_spec",
    "open_rig",
    "port_in_use",
    "prepare_llamacpp_rig",
    "requests_from_records",
    "rig_from_flags",
    "size_flag_rig",
    "size_rig",
    "vllm_serve_argv",
]
