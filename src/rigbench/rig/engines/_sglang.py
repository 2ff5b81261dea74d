"""SGLang (`python -m sglang.launch_server`): facts read from SGLang's source and docs."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from rigbench.client import ChatClient
from rigbench.errors import EndpointError
from rigbench.records import PreflightFinding, ServingCommand
from rigbench.rig._http import fetch_json, probe_json
from rigbench.rig._spec import EngineSpec, LaunchCommand, Spec, finish_argv, opt
from rigbench.rig.engines._base import BaseAdapter, BaseEngine, PreflightInput
from rigbench.rig.engines._flags import FlagReading, FlagSyntax, int_flag
from rigbench.rig.engines._reasoning import template_reasoning_fields

__all__ = ["SGLANG", "SGLangAdapter", "SGLangEngine", "SGLangLaunch", "SGLangSpeculative", "sglang_command"]

_METRICS = {
    "kv_cache_usage_ratio": "sglang:token_usage",
    "requests_running": "sglang:num_running_reqs",
    "requests_waiting": "sglang:num_queue_reqs",
    "prompt_tokens_total": "sglang:prompt_tokens_total",
    "generation_tokens_total": "sglang:generation_tokens_total",
    # cached prompt tokens per finished request, labelled by cache_source (summed); out of
    # prompt_tokens_total (`python/sglang/srt/metrics/collector.py`, TokenizerMetricsCollector)
    "prefix_cache_hits_total": "sglang:cached_tokens_total",
    # SGLang exports speculative decoding as per-batch means, not counters.
    "spec_accept_length": "sglang:spec_accept_length",
    "spec_accept_rate": "sglang:spec_accept_rate",
}


class SGLangAdapter(BaseAdapter):
    name = "sglang"
    health_path = "/health"  # 200 once a tiny generation succeeds; 503 while unhealthy
    metrics_path: str | None = "/metrics"  # only with --enable-metrics
    metrics = MappingProxyType(_METRICS)
    forced_length_exact = True
    # per_position_metric: none, only per-batch means (spec_accept_length / spec_accept_rate)
    # the KV pool's size in tokens, from collector.py; not in the recorded scrape, so not in metric_names
    extra_gauges: Mapping[str, str] = MappingProxyType({"kv_pool_tokens": "sglang:max_total_num_tokens"})

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        # /server_info and /model_info are the current names; the get_ forms are deprecated aliases
        # that older releases only have.
        info = await probe_json(client, "/server_info") or await probe_json(client, "/get_server_info")
        if not isinstance(info, dict) or "version" not in info:
            raise EndpointError(
                f"SGLang server info unavailable: neither {client.server_root}/server_info nor "
                "/get_server_info answered with a JSON object carrying 'version'. Check that the server "
                "is SGLang and has finished starting."
            )
        model_info = await probe_json(client, "/model_info") or await probe_json(client, "/get_model_info")
        states = info.get("internal_states") or [{}]
        return {
            "engine": self.name,
            "version": info["version"],
            "model": info.get("served_model_name") or info.get("model_path"),
            "context_length": info.get("context_length") or info.get("max_req_input_len"),
            "slots": info.get("max_running_requests"),
            "speculative_algorithm": info.get("speculative_algorithm"),
            # Server-cumulative running mean; only meaningful on a server dedicated to the run.
            "avg_spec_accept_length": states[0].get("avg_spec_accept_length") if states else None,
            "raw": {"server_info": info, "model_info": model_info},
        }

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        body = await fetch_json(client, "/v1/tokenize", {"prompt": text, "add_special_tokens": False},
                                engine="SGLang", what="tokenizing", key="tokens")
        return [int(t) for t in body["tokens"]]

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None:
        body = await fetch_json(client, "/v1/detokenize", {"tokens": tokens}, engine="SGLang", what="detokenizing",
                                key="text")
        return str(body["text"])

    # count_chat_tokens: the default (None): /v1/tokenize takes a prompt only; usage.prompt_tokens gives the
    # count afterwards

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        return {"max_tokens": max_tokens, "min_tokens": max_tokens, "ignore_eos": True}

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        return template_reasoning_fields(effort)


DEFAULT_PORT = 30000


class SGLangSpeculative(Spec):
    algorithm: str  # EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM, ...
    draft_model_path: str | None = None
    num_steps: int | None = None
    eagle_topk: int | None = None
    num_draft_tokens: int | None = None


class SGLangLaunch(EngineSpec):
    """`python -m sglang.launch_server --model-path MODEL ...`"""

    kind: Literal["sglang"] = "sglang"
    model: str
    served_model_name: str | None = None
    tensor_parallel_size: int | None = None
    context_length: int | None = None
    mem_fraction_static: float | None = None
    max_running_requests: int | None = None
    speculative: SGLangSpeculative | None = None
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    enable_metrics: bool = True  # rigbench reads /metrics; SGLang serves it only with this flag

    @property
    def served_name(self) -> str | None:
        return self.served_model_name


def sglang_command(s: SGLangLaunch) -> LaunchCommand:
    argv = [*(s.executable or ["python", "-m", "sglang.launch_server"]), "--model-path", s.model,
            "--host", s.host, "--port", str(s.port or DEFAULT_PORT)]
    opt(argv, "--served-model-name", s.served_model_name)
    opt(argv, "--tp-size", s.tensor_parallel_size)
    opt(argv, "--context-length", s.context_length)
    opt(argv, "--mem-fraction-static", s.mem_fraction_static)
    opt(argv, "--max-running-requests", s.max_running_requests)
    if s.speculative is not None:
        sp = s.speculative
        argv += ["--speculative-algorithm", sp.algorithm]
        opt(argv, "--speculative-draft-model-path", sp.draft_model_path)
        opt(argv, "--speculative-num-steps", sp.num_steps)
        opt(argv, "--speculative-eagle-topk", sp.eagle_topk)
        opt(argv, "--speculative-num-draft-tokens", sp.num_draft_tokens)
    opt(argv, "--tool-call-parser", s.tool_call_parser)
    opt(argv, "--reasoning-parser", s.reasoning_parser)
    if s.enable_metrics:
        argv.append("--enable-metrics")
    return LaunchCommand(finish_argv("sglang", s, argv), {})


# -- reading a `sglang.launch_server` command line, and its traps --------------------------------

SGLANG_FLAGS = FlagSyntax(
    markers=("sglang",), programs=("launch_server",),
    bare=frozenset({"--enable-metrics", "--trust-remote-code", "--disable-radix-cache", "--enable-torch-compile",
                    "--disable-cuda-graph", "--skip-server-warmup", "--enable-mixed-chunk"}))


def sglang_preflight(cmd: ServingCommand, inp: PreflightInput) -> list[PreflightFinding]:
    out: list[PreflightFinding] = []
    if inp.uses_tools and "--tool-call-parser" not in cmd.options:
        out.append(PreflightFinding(
            id="tools_without_parser", severity="error",
            problem="the run sends tools, but SGLang has no tool-call parser: calls arrive as plain text.",
            evidence="no --tool-call-parser on the command line",
            fix="--tool-call-parser <the model's parser>"))
    return out


class SGLangEngine(BaseEngine):
    name = "sglang"
    display_name = "SGLang"
    launch_spec = SGLangLaunch
    default_port = DEFAULT_PORT
    start_timeout_s = 1800.0  # CUDA graph capture and warm-up take minutes on a large model
    speculative_flags = MappingProxyType({"--speculative-algorithm": "algorithm",
                                          "--speculative-num-draft-tokens": "num_draft_tokens"})

    flag_syntax = SGLANG_FLAGS
    context_fix = "SGLang --context-length"
    prefix_cache_reset = "SGLang POST /flush_cache"

    def adapter(self) -> SGLangAdapter:
        return SGLangAdapter()

    def slots_fix(self, slots: int) -> str:
        return f"start SGLang with --max-running-requests {slots}"

    async def identify(self, client: ChatClient) -> bool:
        # told apart from vLLM's dev-mode /server_info by its keys; older releases only have the get_ form
        for path in ("/server_info", "/get_server_info"):
            info = await probe_json(client, path)
            if isinstance(info, dict) and "version" in info and {"model_path", "internal_states"} & info.keys():
                return True
        return False

    def command(self, spec: SGLangLaunch) -> LaunchCommand:
        return sglang_command(spec)

    def preflight_rules(self, cmd: ServingCommand, given: PreflightInput) -> list[PreflightFinding]:
        return sglang_preflight(cmd, given)

    def served_context(self, options: Mapping[str, str | bool]) -> FlagReading:
        v = int_flag(options, "--context-length")
        return FlagReading(v, f"--context-length {v}")

    # flag_slots: the default (None): --max-running-requests caps the batch; the live server's figure is used


SGLANG = SGLangEngine()
