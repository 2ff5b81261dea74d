"""`rigbench run`'s rig flags and the rig spec they make (the one place that picks the engine for them).

The flags name an engine to launch (the embedded llama.cpp rig by default, or vLLM) or an endpoint
to attach to; they become the same rig section a plan file writes (`embedded:`, `launch:`,
`endpoint:`), validated by the plan's models. Each engine reads the flags in its own package
(`rig/engines/<engine>/_run_flags.py`); a launch from flags is sized for the run's speed shapes and
concurrency (`size_flag_rig`), as the embedded rig sizes itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rigbench.errors import UsageError
from rigbench.rig._launch_spec import EndpointSpec
from rigbench.rig.engines._llamacpp._run_flags import embedded_from_run_flags
from rigbench.rig.engines._run_flags import RigFlags
from rigbench.rig.engines._vllm import VLLMLaunch
from rigbench.rig.engines._vllm._run_flags import launch_from_run_flags, size_for_run

__all__ = ["RigFlags", "check_rig_flags", "rig_from_flags", "size_flag_rig"]

# the engines `rigbench run --engine` launches; any other is started by the user (--endpoint) or a plan
_FLAG_ENGINES = ("llamacpp", "llama.cpp", "vllm")


def check_rig_flags(f: RigFlags) -> None:
    """Flags that cannot go together, and an engine `rigbench run` does not launch."""
    if f.endpoint and (f.model_file or f.llama_server or f.draft_model):
        raise UsageError("--endpoint attaches to a running server; --model-file/--llama-server/--draft-model "
                         "only apply when rigbench launches the server. Use one or the other.")
    engine = f.engine or "llamacpp"
    if engine not in _FLAG_ENGINES:
        raise UsageError(f"--engine {engine!r}: rigbench launches llamacpp or vllm. For SGLang or Ollama, start the "
                         "server yourself and attach with --endpoint, or use a plan rig (docs/plans.md).")


def rig_from_flags(f: RigFlags) -> dict[str, Any]:
    """The plan rig section the flags make: `launch:` (vLLM), `endpoint:`, or `embedded:` (llama.cpp)."""
    check_rig_flags(f)
    if f.engine == "vllm" and not f.endpoint:
        return {"launch": launch_from_run_flags(f)}
    if f.vllm_python or f.kv_cache_gib:
        raise UsageError("--vllm-python and --kv-cache-gib apply to --engine vllm only.")
    if f.endpoint:
        return {"endpoint": EndpointSpec(base_url=f.endpoint, model=f.model)}
    return {"embedded": embedded_from_run_flags(f)}


def size_flag_rig(spec: Any, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> Any:
    """A vLLM launch from flags, sized for the validated speed settings as the embedded rig is; any
    other spec as it is."""
    return size_for_run(spec, shapes, concurrency) if isinstance(spec, VLLMLaunch) else spec
