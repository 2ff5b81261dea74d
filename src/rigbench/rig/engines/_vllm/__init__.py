"""vLLM: everything rigbench knows about it, in one package.

`_engine` is the `Engine` (adapter, launch spec and argv, flags, preflight rules, log and metrics
readers), re-exported here; beside it, imported by their users rather than here: `_env` (finding
vLLM, or installing the managed CPU venv, and converting a GGUF) and `_rig` (the launched rig that
does both when it starts and records the KV pool it got).
"""

from rigbench.rig.engines._vllm._engine import (
    VLLM,
    VLLM_API_SERVER_MODULE,
    VLLMAdapter,
    VLLMEngine,
    VLLMLaunch,
    parse_vllm_log,
    pool_from_metrics,
    vllm_command,
)
from rigbench.rig.engines._vllm._kv import VLLMAccounting

__all__ = [
    "VLLM",
    "VLLM_API_SERVER_MODULE",
    "VLLMAccounting",
    "VLLMAdapter",
    "VLLMEngine",
    "VLLMLaunch",
    "parse_vllm_log",
    "pool_from_metrics",
    "vllm_command",
]
