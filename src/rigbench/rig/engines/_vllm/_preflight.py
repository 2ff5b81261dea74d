"""Reading a `vllm serve` command line, and the configuration traps preflight finds in it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rigbench.records import PreflightFinding, ServingCommand
from rigbench.rig.engines._base import PreflightInput
from rigbench.rig.engines._flags import FlagSyntax, int_flag

__all__ = ["VLLM_FLAGS", "vllm_preflight", "vllm_stop_strings"]

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


def vllm_stop_strings(options: Mapping[str, str | bool]) -> list[str]:
    raw = options.get("--override-generation-config")
    if not isinstance(raw, str):
        return []
    try:
        val = json.loads(raw)
    except ValueError:
        return []
    s = val.get("stop") if isinstance(val, dict) else None
    return [s] if isinstance(s, str) else list(s or [])
