"""What vLLM tells only in its start-up log and its /metrics: the KV pool it got, compile cache, config."""

from __future__ import annotations

import re
from typing import Any

from rigbench.rig.engines._prometheus import parse_prometheus

__all__ = ["parse_vllm_log", "pool_from_metrics"]

_POOL = re.compile(r"KV cache size: ([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
# vllm/compilation/backends.py, decorators.py and monitor.py (0.32): a warm start loads the graphs (or a
# whole AOT artifact) from VLLM_CACHE_ROOT/torch_compile_cache; a cold one compiles them.
_COMPILE_WARM = re.compile(r"Directly load the compiled graph\(s\) for .*? from the cache, took ([\d.]+) s"
                           r"|Directly load AOT compilation from path")
_COMPILE_COLD = re.compile(r"Compiling a graph for .*? takes ([\d.]+) s")
_COMPILE_TOTAL = re.compile(r"torch\.compile (?:takes|took) ([\d.]+) s in total")
_BATCHED = re.compile(r"max_num_batched_tokens=(\d+)")
_ASYNC = re.compile(r"[Aa]synchronous scheduling is enabled")
_ENGINE_CONFIG = re.compile(r"Initializing a V1 LLM engine \(v([^)]+)\) with config: (.*)$")
_CONFIG_KEYS = ("dtype", "max_seq_len", "enforce_eager", "kv_cache_dtype", "enable_prefix_caching",
                "speculative_config")


def parse_vllm_log(text: str) -> dict[str, Any]:
    """Facts vLLM prints while starting (absent keys: not printed by this version)."""
    out: dict[str, Any] = {}
    if m := _POOL.search(text):
        out["kv_pool_tokens_log"] = int(m.group(1).replace(",", ""))
    if m := _CONCURRENCY.search(text):
        out["max_concurrency_log"] = {"tokens_per_request": int(m.group(1).replace(",", "")),
                                      "sessions": float(m.group(2))}
    warm = [float(x) for x in _COMPILE_WARM.findall(text) if x]
    warm_any = _COMPILE_WARM.search(text) is not None
    cold = [float(x) for x in _COMPILE_COLD.findall(text)]
    if cold:
        out["compile_cache"] = "cold"
    elif warm_any:
        out["compile_cache"] = "warm"
    elif "enforce_eager=True" in text:
        out["compile_cache"] = "off"
    if m := _BATCHED.search(text):
        out["max_num_batched_tokens_log"] = int(m.group(1))
    out["async_scheduling_log"] = bool(_ASYNC.search(text))
    if m := _COMPILE_TOTAL.search(text):
        out["compile_s"] = float(m.group(1))
    elif cold or warm:
        out["compile_s"] = round(sum(cold) + sum(warm), 3)
    for line in text.splitlines():
        if m := _ENGINE_CONFIG.search(line):
            out["version_log"] = m.group(1)
            cfg = m.group(2)
            for key in _CONFIG_KEYS:
                km = re.search(rf"(?:^|, ){key}=(.*?)(?=, [a-z_]+=|$)", cfg)
                if km:
                    out[f"engine_{key}"] = km.group(1)
            break
    return out


def pool_from_metrics(text: str) -> dict[str, Any]:
    """`vllm:cache_config_info` labels: block_size x num_gpu_blocks (the CPU pool uses the same label)."""
    for s in parse_prometheus(text).get("vllm:cache_config_info", []):
        labels = dict(s.labels)
        try:
            block = int(labels["block_size"])
            blocks = int(labels["num_gpu_blocks"])
        except (KeyError, ValueError):
            return {"cache_config_info": labels}
        return {"block_size": block, "num_blocks": blocks, "kv_pool_tokens_metrics": block * blocks,
                "cache_config_info": labels}
    return {}
