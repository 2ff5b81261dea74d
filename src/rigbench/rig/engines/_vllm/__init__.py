"""vLLM: everything rigbench knows about it, in one package.

One module a job, re-exported here: `_engine` (the `Engine` object, made of the rest), `_adapter` (endpoints,
metric names, request knobs), `_launch` (the launch spec and its argv), `_preflight` (reading a `vllm serve`
command line, and its traps), `_log` (what the start-up log and /metrics tell), `_kv` (KV block accounting),
`_speculation` and `_versions` (what the server says about speculation, by version), `_env` (finding vLLM, or
installing the managed CPU venv, and converting a GGUF), `_rig` (the launched rig that does both when it starts
and records the KV pool it got) and `_run_flags` (the spec `rigbench run --engine vllm` makes).
"""

from rigbench.rig.engines._vllm._adapter import VLLMAdapter
from rigbench.rig.engines._vllm._engine import VLLM, VLLMEngine
from rigbench.rig.engines._vllm._kv import VLLMAccounting
from rigbench.rig.engines._vllm._launch import VLLM_API_SERVER_MODULE, VLLMLaunch, vllm_command
from rigbench.rig.engines._vllm._log import parse_vllm_log, pool_from_metrics

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
