"""Engine adapters: what rigbench knows about llama.cpp, vLLM, SGLang and Ollama."""

from rigbench.rig._spec import EngineSpec, LaunchCommand
from rigbench.rig.engines._base import (
    BaseAdapter,
    BaseEngine,
    Engine,
    EngineAdapter,
    PreflightInput,
    ScenarioLength,
)
from rigbench.rig.engines._detect import detect_engine
from rigbench.rig.engines._flags import FlagReading, FlagSyntax, int_flag, parse_flags
from rigbench.rig.engines._llamacpp import LlamaCppAdapter
from rigbench.rig.engines._llamacpp._embedded import EmbeddedRig
from rigbench.rig.engines._ollama import OllamaAdapter
from rigbench.rig.engines._prometheus import MetricSample, canonical_values, parse_prometheus
from rigbench.rig.engines._registry import (
    ENGINE_NAMES,
    ENTRY_POINT_GROUP,
    EngineName,
    builtin_engines,
    engine_problem,
    engine_problems,
    engine_source,
    get_adapter,
    get_engine,
    known_engines,
    register_engine,
    unregister_engine,
)
from rigbench.rig.engines._sglang import SGLangAdapter
from rigbench.rig.engines._speculative import speculative_from_argv
from rigbench.rig.engines._vllm import VLLMAdapter

__all__ = [
    "ENGINE_NAMES",
    "ENTRY_POINT_GROUP",
    "BaseAdapter",
    "BaseEngine",
    "EmbeddedRig",
    "Engine",
    "EngineAdapter",
    "EngineName",
    "EngineSpec",
    "FlagReading",
    "FlagSyntax",
    "LaunchCommand",
    "LlamaCppAdapter",
    "MetricSample",
    "OllamaAdapter",
    "PreflightInput",
    "SGLangAdapter",
    "ScenarioLength",
    "VLLMAdapter",
    "builtin_engines",
    "canonical_values",
    "detect_engine",
    "engine_problem",
    "engine_problems",
    "engine_source",
    "get_adapter",
    "get_engine",
    "int_flag",
    "known_engines",
    "parse_flags",
    "parse_prometheus",
    "register_engine",
    "speculative_from_argv",
    "unregister_engine",
]
