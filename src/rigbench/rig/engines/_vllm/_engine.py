"""vLLM (`vllm serve`): facts read from vLLM's source and docs, tested against recorded responses."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Self

from rigbench.client import ChatClient
from rigbench.records import PreflightFinding, ServingCommand
from rigbench.rig.engines._base import PreflightInput
from rigbench.rig.engines._flags import FlagReading, FlagSyntax, int_flag
from rigbench.rig.engines._http import (
    get_json,
    has_metric_prefix,
    post_json,
    probe_json,
    probe_text,
    require_json,
)
from rigbench.rig.engines._prometheus import parse_prometheus
from rigbench.rig.engines._reasoning import template_reasoning_fields
from rigbench.rig.engines._run_flags import RigFlags
from rigbench.rig.engines._spec import EngineSpec, LaunchCommand, finish_argv, opt
from rigbench.rig.engines._vllm._kv import VLLMAccounting, vllm_accounting
from rigbench.rig.engines._vllm._speculation import vllm_speculation
from rigbench.rig.engines._vllm._versions import PROMPT_TOKENS_DETAILS_SINCE, version_at_least
from rigbench.sizing import context_per_slot, slots_for

if TYPE_CHECKING:
    from rigbench.rig._rig import LaunchedRig

__all__ = [
    "VLLM",
    "VLLM_API_SERVER_MODULE",
    "VLLMAdapter",
    "VLLMEngine",
    "VLLMLaunch",
    "parse_vllm_log",
    "pool_from_metrics",
    "vllm_command",
    "with_cached_token_counts",
]

_METRICS = {
    "kv_cache_usage_ratio": "vllm:kv_cache_usage_perc",  # a 0..1 ratio despite the name
    "requests_running": "vllm:num_requests_running",
    "requests_waiting": "vllm:num_requests_waiting",
    "prompt_tokens_total": "vllm:prompt_tokens_total",
    "generation_tokens_total": "vllm:generation_tokens_total",
    "spec_draft_tokens_total": "vllm:spec_decode_num_draft_tokens_total",
    "spec_accepted_tokens_total": "vllm:spec_decode_num_accepted_tokens_total",
    "spec_drafts_total": "vllm:spec_decode_num_drafts_total",
    # V1 counters, in tokens (`vllm/v1/metrics/loggers.py`: `Counter(name="vllm:prefix_cache_queries")`,
    # `_total` added on the wire): prompt tokens looked up, and of those found in the prefix cache.
    "prefix_cache_queries_total": "vllm:prefix_cache_queries_total",
    "prefix_cache_hits_total": "vllm:prefix_cache_hits_total",
}
# Before the rename (V0 and early V1) the KV gauge was GPU-only and named this; the prefix-cache
# counters were first named `vllm:gpu_prefix_cache_*` (later kept as deprecated aliases of these).
_FALLBACKS = {"kv_cache_usage_ratio": "vllm:gpu_cache_usage_perc",
              "prefix_cache_queries_total": "vllm:gpu_prefix_cache_queries_total",
              "prefix_cache_hits_total": "vllm:gpu_prefix_cache_hits_total"}


class VLLMAdapter:
    name = "vllm"
    health_path = "/health"  # empty 200 when the engine is up, 503 if the engine died
    metrics_path: str | None = "/metrics"  # always on
    forced_length_exact = True
    # vllm/v1/spec_decode/metrics.py (SpecDecodingProm, 0.10 line): a Counter, `_total` on the wire
    per_position_metric: str | None = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    reports_usage = True
    tokenize_unidentified = True  # POST /tokenize {"prompt": ...}
    extra_gauges: Mapping[str, str] = MappingProxyType({})

    def __init__(self) -> None:
        self.metric_names: dict[str, str] = dict(_METRICS)
        self.metric_fallbacks: dict[str, str] = dict(_FALLBACKS)

    async def server_info(self, client: ChatClient) -> dict[str, Any]:
        url = client.server_root + "/version"
        status, version = await get_json(client, "/version")
        version = require_json(status, version, engine="vLLM", what="reading /version", url=url,
                               key="version")
        models = await probe_json(client, "/v1/models")
        data = models.get("data") if isinstance(models, dict) else None
        first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
        raw: dict[str, Any] = {"version": version, "models": models}
        # Only served with VLLM_SERVER_DEV_MODE=1; it holds the full engine config when present.
        dev_info = await probe_json(client, "/server_info")
        if dev_info is not None:
            raw["server_info"] = dev_info
        return {
            "engine": self.name,
            "version": version["version"],
            "model": first.get("id"),
            "context_length": first.get("max_model_len"),
            "slots": None,  # max_num_seqs is not exposed outside dev mode
            "speculation": vllm_speculation(str(version["version"]), await probe_text(client, "/metrics"), dev_info),
            "raw": raw,
        }

    async def tokenize(self, client: ChatClient, text: str) -> list[int] | None:
        url = client.server_root + "/tokenize"
        status, body = await post_json(client, "/tokenize", {"prompt": text, "add_special_tokens": False})
        body = require_json(status, body, engine="vLLM", what="tokenizing", url=url, key="tokens")
        return [int(t) for t in body["tokens"]]

    async def detokenize(self, client: ChatClient, tokens: list[int]) -> str | None:
        url = client.server_root + "/detokenize"
        status, body = await post_json(client, "/detokenize", {"tokens": tokens})
        body = require_json(status, body, engine="vLLM", what="detokenizing", url=url, key="prompt")
        return str(body["prompt"])

    async def count_chat_tokens(
        self, client: ChatClient, model: str, messages: list[dict[str, Any]]
    ) -> int | None:
        # The messages form renders the served chat template exactly as the chat path does.
        url = client.server_root + "/tokenize"
        status, body = await post_json(client, "/tokenize", {"model": model, "messages": messages,
                                                             "add_generation_prompt": True})
        body = require_json(status, body, engine="vLLM", what="counting chat tokens", url=url, key="count")
        return int(body["count"])

    def forced_length_fields(self, max_tokens: int) -> dict[str, Any]:
        return {"max_tokens": max_tokens, "min_tokens": max_tokens, "ignore_eos": True}

    def reasoning_fields(self, effort: str | None) -> dict[str, Any]:
        return template_reasoning_fields(effort)


DEFAULT_PORT = 8000


class VLLMLaunch(EngineSpec):
    """`vllm serve MODEL ...`

    `model` is a Hugging Face id or directory, a .gguf (converted once to a bf16 directory), or
    "embedded" (the bundled SmolLM2-135M, converted). With no `executable`, the launched rig finds
    vLLM (`vllm` on PATH or importable) or installs the managed CPU venv (`_env.py` beside this module).
    """

    kind: Literal["vllm"] = "vllm"
    model: str
    served_model_name: str | None = None
    tensor_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    # --speculative-config JSON, e.g. {"method": "eagle3", "model": "...", "num_speculative_tokens": 4}
    speculative_config: dict[str, Any] | None = None
    tool_call_parser: str | None = None  # also turns on --enable-auto-tool-choice
    reasoning_parser: str | None = None
    generation_config: str | None = None  # "auto" | "vllm" | a folder
    dtype: str | None = None  # --dtype (CPU: bfloat16)
    enforce_eager: bool = False  # --enforce-eager: no torch.compile (faster start, slower decode)
    cpu_kvcache_space_gib: float | None = None  # VLLM_CPU_KVCACHE_SPACE: the KV pool on a CPU build

    @property
    def served_name(self) -> str | None:
        return self.served_model_name

    def sized_for_run(self, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> Self:
        """Context and sequences for the validated speed settings, as the embedded rig sizes itself."""
        return self.model_copy(update={
            "max_model_len": self.max_model_len or context_per_slot(shapes, floor=_FLOOR, unknown_need=_UNKNOWN_NEED),
            "max_num_seqs": slots_for(concurrency)})


# vLLM on a CPU: its KV pool is small (1 GiB by default), so a tighter floor.
_FLOOR, _UNKNOWN_NEED = 2048, 1792

VLLM_API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def vllm_command(s: VLLMLaunch) -> LaunchCommand:
    exe = s.executable or ["vllm", "serve"]
    # `vllm serve` takes the model as its first argument; the api_server module only as --model
    model = ["--model", s.model] if exe[-1] == VLLM_API_SERVER_MODULE else [s.model]
    argv = [*exe, *model, "--host", s.host, "--port", str(s.port or DEFAULT_PORT)]
    opt(argv, "--served-model-name", s.served_model_name)
    opt(argv, "--tensor-parallel-size", s.tensor_parallel_size)
    opt(argv, "--max-model-len", s.max_model_len)
    opt(argv, "--gpu-memory-utilization", s.gpu_memory_utilization)
    opt(argv, "--max-num-seqs", s.max_num_seqs)
    opt(argv, "--max-num-batched-tokens", s.max_num_batched_tokens)
    if s.speculative_config is not None:
        spec_json = json.dumps(s.speculative_config, sort_keys=True, separators=(",", ":"))
        argv += ["--speculative-config", spec_json]
    if s.tool_call_parser is not None:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", s.tool_call_parser]
    opt(argv, "--reasoning-parser", s.reasoning_parser)
    opt(argv, "--generation-config", s.generation_config)
    opt(argv, "--dtype", s.dtype)
    if s.enforce_eager:
        argv.append("--enforce-eager")
    env = {} if s.cpu_kvcache_space_gib is None else {"VLLM_CPU_KVCACHE_SPACE": f"{s.cpu_kvcache_space_gib:g}"}
    return LaunchCommand(finish_argv("vllm", s, argv), env)


PROMPT_TOKENS_DETAILS = "--enable-prompt-tokens-details"


def with_cached_token_counts(spec: VLLMLaunch, version: str | None) -> tuple[VLLMLaunch, str]:
    """`spec` with --enable-prompt-tokens-details added to its extra_args where the vLLM that runs it (of
    `version`) then reports each request's cached prompt tokens (usage.prompt_tokens_details.cached_tokens,
    which the prefix-cache check of load windows reads: they have no /metrics fallback), and what was done.
    A spec whose extra_args already set the flag, either way, is taken as written: never a repeated flag."""
    given = {a.split("=", 1)[0] for a in spec.extra_args}
    if given & {PROMPT_TOKENS_DETAILS, "--no-enable-prompt-tokens-details"}:
        return spec, f"{PROMPT_TOKENS_DETAILS}: as extra_args set it"
    if not version_at_least(version, PROMPT_TOKENS_DETAILS_SINCE):
        floor = ".".join(map(str, PROMPT_TOKENS_DETAILS_SINCE))
        return spec, (f"{PROMPT_TOKENS_DETAILS} not added: vLLM {version or '(version unknown)'} is not known to "
                      f"report cached prompt tokens with it ({floor}+ does); the prefix-cache check of load windows "
                      "will say the server does not report them. Add it to extra_args if this vLLM has it.")
    return spec.model_copy(update={"extra_args": [*spec.extra_args, PROMPT_TOKENS_DETAILS]}), \
        f"{PROMPT_TOKENS_DETAILS} added (vLLM {version}: per-request cached prompt tokens)"


# -- reading a `vllm serve` command line, and its traps ------------------------------------------

VLLM_FLAGS = FlagSyntax(
    markers=("vllm",), programs=("api_server",), subcommands=("serve",), model_positional=True,
    bare=frozenset({"--enable-auto-tool-choice", "--trust-remote-code", "--enforce-eager", "--enable-prefix-caching",
                    "--no-enable-prefix-caching", "--enable-chunked-prefill", "--no-enable-chunked-prefill",
                    "--disable-log-requests", "--enable-log-requests", "--disable-log-stats"}))

# vLLM defaults the checks fall back to when a flag is absent (read from vLLM's EngineArgs /
# SchedulerConfig; the 2048-token budget is what seed 000 ran into).
VLLM_DEFAULT_MAX_NUM_SEQS = 256
VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048


def _vllm_spec(cmd: ServingCommand) -> dict[str, Any] | None:
    raw = cmd.options.get("--speculative-config") or cmd.options.get("--speculative_config")
    if not isinstance(raw, str):
        return None
    try:
        spec = json.loads(raw)
    except ValueError:
        return {"_unparsable": raw}
    return spec if isinstance(spec, dict) else {"_unparsable": raw}


def vllm_preflight(cmd: ServingCommand, inp: PreflightInput) -> list[PreflightFinding]:
    out: list[PreflightFinding] = []
    o = cmd.options
    spec = _vllm_spec(cmd)
    if spec is not None and "_unparsable" in spec:
        out.append(PreflightFinding(
            id="vllm_spec_config_json", severity="error",
            problem="--speculative-config is not valid JSON, so vLLM will refuse to start.",
            evidence=f"--speculative-config {spec['_unparsable']!r}",
            fix="quote the JSON for your shell, e.g. --speculative-config '{\"method\": ..., "
                "\"num_speculative_tokens\": 4}'"))
    elif spec is not None:
        k = int(spec.get("num_speculative_tokens") or 0)
        seqs = int_flag(o, "--max-num-seqs")
        budget = int_flag(o, "--max-num-batched-tokens")
        s = seqs if seqs is not None else VLLM_DEFAULT_MAX_NUM_SEQS
        b = budget if budget is not None else VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS
        need = s * (1 + k)
        if k and b < need:
            fix_to = 1 << (need - 1).bit_length()
            out.append(PreflightFinding(
                id="vllm_spec_token_budget", severity="error",
                problem=(f"speculative decoding needs max_num_seqs x (1 + num_speculative_tokens) = {need} tokens of "
                         f"scheduler budget but gets {b}. vLLM does not refuse this (0.32 refuses only a budget at "
                         "or below the draft slots: K for DFlash, 1 for a draft model, 0 for n-gram) and its only "
                         "warning ('may lead to suboptimal performance') is printed for any budget under 8192, so "
                         "it does not single this out. With DFlash on a GPU the overrun was a device-side assert "
                         "that looks like a hardware problem (seed 000); in rigbench's live CPU trial (n-gram k=4, "
                         "8 seqs, budget 16) nothing visible changed against a budget of 64 (docs/engines.md). "
                         "Lowering the draft depth also 'fixes' it, at up to 2x less speed."),
                evidence=(f"method={spec.get('method')!r}, num_speculative_tokens={k}; max_num_seqs={s}"
                          f"{'' if seqs is not None else ' (default)'}; max_num_batched_tokens={b}"
                          f"{'' if budget is not None else ' (default)'}"),
                fix=f"--max-num-batched-tokens {fix_to} (or lower --max-num-seqs); keep the draft depth."))
    gen = o.get("--generation-config")
    if gen is None:
        out.append(PreflightFinding(
            id="vllm_generation_config", severity="warn",
            problem=("--generation-config is not set. Its default changed across vLLM releases; when the "
                     "model's generation_config.json is not read, its stop tokens and sampling defaults are "
                     "silently dropped and turns can run past their end."),
            evidence="no --generation-config on the command line",
            fix="--generation-config auto"))
    elif gen != "auto":
        out.append(PreflightFinding(
            id="vllm_generation_config", severity="warn",
            problem=f"--generation-config {gen} ignores the model's generation_config.json (its stop tokens).",
            evidence=f"--generation-config {gen}", fix="--generation-config auto"))
    if inp.uses_tools and not ("--enable-auto-tool-choice" in o and "--tool-call-parser" in o):
        missing = [f for f in ("--enable-auto-tool-choice", "--tool-call-parser") if f not in o]
        out.append(PreflightFinding(
            id="tools_without_parser", severity="error",
            problem="the run sends tools, but vLLM has no tool-call parser, so it refuses them: verified live on "
                    "0.32, every request with tools is HTTP 400 (tool_choice auto or absent: '\"auto\" tool "
                    "choice requires --enable-auto-tool-choice and --tool-call-parser'; required or named: "
                    "'requires --tool-call-parser').",
            evidence=f"missing {' and '.join(missing)}",
            fix="--enable-auto-tool-choice --tool-call-parser <the model's parser> (see the model's recipe)"))
    return out


def _vllm_stops(options: Mapping[str, str | bool]) -> list[str]:
    raw = options.get("--override-generation-config")
    if not isinstance(raw, str):
        return []
    try:
        val = json.loads(raw)
    except ValueError:
        return []
    s = val.get("stop") if isinstance(val, dict) else None
    return [s] if isinstance(s, str) else list(s or [])


# -- what vLLM tells only in its start-up log and /metrics ---------------------------------------

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


class VLLMEngine:
    name = "vllm"
    aliases: tuple[str, ...] = ()
    display_name = "vLLM"
    launch_spec = VLLMLaunch
    default_port = DEFAULT_PORT
    start_timeout_s = 1800.0  # a cold torch.compile on a CPU takes minutes
    death_signal = signal.SIGTERM  # shuts down in its handler
    speculative_flags = MappingProxyType({"--speculative-config": "config"})

    flag_syntax = VLLM_FLAGS
    context_fix = "vLLM --max-model-len"
    model_stop_fix = "vLLM: --generation-config auto"
    prefix_cache_reset = "vLLM POST /reset_prefix_cache with VLLM_SERVER_DEV_MODE=1"
    context_overrun_note = (
        " vLLM (verified live on 0.32) refuses a prompt past --max-model-len with HTTP 400, but when "
        "only prompt + output is over it answers 200 with the output cut short and finish_reason "
        "'stop' (431 + 300 tokens at 512: 1 token), silently.")

    def adapter(self) -> VLLMAdapter:
        return VLLMAdapter()

    def slots_fix(self, slots: int) -> str:
        return f"start vLLM with --max-num-seqs {slots}"

    def kv_accounting(self, settings: Mapping[str, int]) -> VLLMAccounting:
        return vllm_accounting(settings)

    async def identify(self, client: ChatClient) -> bool:
        # /version alone is too common a path: confirmed by `owned_by: "vllm"` or vllm: metrics
        version = await probe_json(client, "/version")
        if not (isinstance(version, dict) and "version" in version):
            return False
        models = await probe_json(client, "/v1/models")
        owners = {m.get("owned_by") for m in (models or {}).get("data", []) if isinstance(m, dict)} \
            if isinstance(models, dict) else set()
        return "vllm" in owners or await has_metric_prefix(client, "vllm:")

    def command(self, spec: VLLMLaunch) -> LaunchCommand:
        return vllm_command(spec)

    def open(self, spec: Any, log_path: Path, *, api_key: str | None, note: Callable[[str], None],
             build_progress: Any) -> LaunchedRig:
        """A rig that finds vLLM (or installs the managed CPU venv) and converts the model when it starts."""
        # function-level: the vLLM rig imports the rig layer, which imports this registry
        from rigbench.rig.engines._vllm._rig import VLLMRig

        return VLLMRig(spec, log_path, api_key=api_key, note=note, progress=build_progress)

    def setup(self, flags: RigFlags, note: Callable[[str], None],
              progress: Callable[[int, int | None, str], None]) -> str:
        """vLLM found (or the managed CPU venv installed) and a Hugging Face copy of the embedded model."""
        # function-level: the managed venv and the model sources import the rig layer, which imports this registry
        from rigbench.rig._models import EMBEDDED_MODEL
        from rigbench.rig.engines._vllm._env import find_vllm, hf_copy_of_gguf, install_vllm

        install = find_vllm(Path(flags.vllm_python) if flags.vllm_python else None)
        if install is None:
            note("installing the managed vLLM CPU venv (once: about 3 min, 3.4 GB; cached)")
            install = install_vllm(progress)
        note(f"vLLM {install.version or '?'} ({install.origin}): {install.python}")
        gguf = EMBEDDED_MODEL.resolve()
        note(f"model: {gguf} (sha256 verified)")
        note(f"Hugging Face copy for vLLM: {hf_copy_of_gguf(gguf, install, progress)}")
        return "`rigbench run --engine vllm` will use these."

    def rig_from_run_flags(self, flags: RigFlags) -> dict[str, Any]:
        # function-level: the flags' reading finds vLLM (_env), which imports this module
        from rigbench.rig.engines._vllm._run_flags import launch_from_run_flags

        return {"launch": launch_from_run_flags(flags)}

    def crash_hint(self, exit_code: int | None, log_text: str) -> str:
        return ""

    def preflight_rules(self, cmd: ServingCommand, given: PreflightInput) -> list[PreflightFinding]:
        return vllm_preflight(cmd, given)

    def served_context(self, options: Mapping[str, str | bool]) -> FlagReading:
        v = int_flag(options, "--max-model-len")
        return FlagReading(v, f"--max-model-len {v}")

    def flag_slots(self, options: Mapping[str, str | bool]) -> FlagReading:
        return FlagReading(None, "")  # --max-num-seqs caps the batch; the live server's figure is used

    def stop_strings(self, options: Mapping[str, str | bool]) -> list[str]:
        return _vllm_stops(options)


VLLM = VLLMEngine()
