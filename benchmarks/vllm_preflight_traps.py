"""What vLLM itself does with each configuration rigbench's preflight warns about (docs/engines.md).

Starts the real vLLM (managed CPU venv, SmolLM2-135M converted from the embedded GGUF) once,
--enforce-eager for a faster start (the traps are scheduler and API behaviour, not compiled
kernels), configured with all three traps at once, then again with a budget that satisfies the
budget rule (64), as the control:

1. token budget below max_num_seqs x (1 + speculative tokens): ngram k=4, max_num_seqs 8,
   max_num_batched_tokens 16 (vLLM's own check only asks budget >= max_num_seqs). Eight
   concurrent greedy requests; their text is compared with the same prompt served alone, and
   the drafted/accepted counters are read from /metrics.
2. context: max_model_len 512. A prompt over the context, a prompt + max_tokens over it.
3. tool parser: no --enable-auto-tool-choice / --tool-call-parser; tool_choice auto / required /
   named / absent.

    python benchmarks/vllm_preflight_traps.py /tmp/traps-logs > benchmarks/results/vllm_preflight_traps.json
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from rigbench.client import ChatClient
from rigbench.honesty._preflight import preflight
from rigbench.rig.engines import VLLMAdapter, canonical_values
from rigbench.rig.engines._vllm import VLLM, VLLMLaunch
from rigbench.rig.engines._vllm._rig import VLLMRig

NGRAM = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
PROMPT = ("Copy this list exactly, again and again, without stopping: alpha beta gamma delta epsilon zeta eta "
          "theta; alpha beta gamma delta epsilon zeta eta theta;")
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}


def _log_lines(rig: VLLMRig, *patterns: str) -> list[str]:
    text = rig.process.log_path.read_text(errors="replace")
    return [ln.strip()[-300:] for ln in text.splitlines() if any(re.search(p, ln) for p in patterns)]


async def _chat(c: ChatClient, model: str, **body: Any) -> dict[str, Any]:
    status, resp = await c.post_json(c.base_url + "/chat/completions", {"model": model, "temperature": 0, **body},
                                     timeout_s=600)
    out: dict[str, Any] = {"http_status": status}
    if status == 200 and isinstance(resp, dict):
        msg = resp["choices"][0]["message"]
        out.update(content=msg.get("content"), tool_calls=[t["function"] for t in msg.get("tool_calls") or []],
                   finish_reason=resp["choices"][0].get("finish_reason"), usage=resp.get("usage"))
    else:
        out["error"] = str(resp)[:400]
    return out


async def serve_trap(log: Path, budget: int) -> dict[str, Any]:
    """One server: ngram k=4, max_num_seqs 8, max_num_batched_tokens `budget`, max_model_len 512, no tool parser."""
    spec = VLLMLaunch(model="embedded", dtype="bfloat16", max_model_len=512, max_num_seqs=8,
                      max_num_batched_tokens=budget, speculative_config=NGRAM, cpu_kvcache_space_gib=1,
                      enforce_eager=True, generation_config="auto")
    rig = VLLMRig(spec, log, engine=VLLM)
    result: dict[str, Any] = {"config": f"ngram k=4, max_num_seqs 8, max_num_batched_tokens {budget} "
                                        f"(rigbench's rule needs 8 x 5 = 40), max_model_len 512, no tool parser"}
    result["preflight"] = [f"{f.id}: {f.severity}" for f in preflight(rig.argv).findings]
    try:
        await rig.start()
    except Exception as e:
        result["started"] = False
        result["error"] = str(e)[-1500:]
        return result
    result["started"] = True
    try:
        c, model = rig.client, rig.served_name or ""
        adapter = VLLMAdapter()
        try:
            alone = await _chat(c, model, messages=[{"role": "user", "content": PROMPT}], max_tokens=64,
                                min_tokens=64, ignore_eos=True)
            result["alone"] = {k: alone.get(k) for k in ("http_status", "finish_reason", "usage", "error")}
            _, m0 = await c.get_text(c.server_root + "/metrics")
            many = await asyncio.gather(*[_chat(c, model, messages=[{"role": "user", "content": PROMPT}],
                                                max_tokens=64, min_tokens=64, ignore_eos=True) for _ in range(8)])
            _, m1 = await c.get_text(c.server_root + "/metrics")
            a, b = canonical_values(adapter, m0), canonical_values(adapter, m1)
            d = {k: b[k] - a.get(k, 0.0) for k in b}
            result["concurrent"] = {
                "ok": sum(1 for r in many if r["http_status"] == 200),
                "same_text_as_alone": sum(1 for r in many if r.get("content") == alone.get("content")),
                "completion_tokens": [(r.get("usage") or {}).get("completion_tokens") for r in many],
                "generated": d.get("generation_tokens_total"), "drafts": d.get("spec_drafts_total"),
                "draft_tokens": d.get("spec_draft_tokens_total"), "accepted": d.get("spec_accepted_tokens_total"),
            }
            result.update(await context_and_tools(c, model))
        except Exception as e:  # the engine died under the requests: that is the finding
            await asyncio.sleep(3)
            result["request_error"] = f"{type(e).__name__}: {e}"
            result["engine_exit_code"] = rig.process.exit_code()
        result["log"] = _log_lines(rig, r"max_num_scheduled_tokens", r"Error", r"error", r"assert", r"died",
                                   r"Traceback")[-25:]
    finally:
        await rig.stop()
    return result


async def context_and_tools(c: ChatClient, model: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    long_prompt = "word " * 700
    result["prompt_over_context"] = await _chat(c, model, messages=[{"role": "user", "content": long_prompt}],
                                                max_tokens=8)
    result["prompt_plus_max_tokens_over_context"] = await _chat(
        c, model, messages=[{"role": "user", "content": "word " * 400}], max_tokens=300)
    ask = [{"role": "user", "content": "What's the weather in Tokyo? Use the get_weather tool."}]
    result["tool_choice_auto"] = await _chat(c, model, messages=ask, tools=[WEATHER], tool_choice="auto",
                                             max_tokens=64)
    result["tool_choice_required"] = await _chat(c, model, messages=ask, tools=[WEATHER],
                                                 tool_choice="required", max_tokens=64)
    result["tool_choice_named"] = await _chat(
        c, model, messages=ask, tools=[WEATHER], max_tokens=64,
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    result["tools_no_choice"] = await _chat(c, model, messages=ask, tools=[WEATHER], max_tokens=64)
    return result




async def main() -> None:
    logs = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="vllm-traps-"))
    logs.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"logs": str(logs)}
    for name, budget in (("trap_budget_16", 16), ("control_budget_64", 64)):
        out[name] = await serve_trap(logs / f"budget{budget}.log", budget)
        (logs / "results.json").write_text(json.dumps(out, indent=2))  # kept even if stopped later
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    asyncio.run(main())
