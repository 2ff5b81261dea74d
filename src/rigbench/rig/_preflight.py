"""Preflight: catch serving-configuration traps before a run, from the engine's command line.

Each check names the problem, the evidence (the flags it read, or their defaults) and the fix.
The traps come from the seeds: a DFlash drafter that overruns vLLM's token budget and "reads
exactly like a hardware incompatibility" (seed 000); a stop token that ends the turn before tool
calls complete, and `--generation-config auto` being needed for the model's own stop tokens
(seed 003). `rigbench check -- <command line>` prints these; `rigbench run` runs them before
launching a rig and records the report (kind="preflight").
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigbench.records import PreflightFinding, PreflightReport, ServingCommand

__all__ = [
    "PreflightFinding",
    "PreflightInput",
    "PreflightReport",
    "ScenarioLength",
    "ServingCommand",
    "parse_command",
    "preflight",
]


# vLLM defaults the checks fall back to when a flag is absent (read from vLLM's EngineArgs /
# SchedulerConfig; the 2048-token budget is what seed 000 ran into).
VLLM_DEFAULT_MAX_NUM_SEQS = 256
VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048

# Stop strings that end a *message*, not a *turn*: stopping there cuts a turn that goes on to call
# tools (seed 003: `<|eom|>` ends the thinking channel; Llama 3.1 ends a tool-call message with
# `<|eom_id|>` and expects the tool result next).
TURN_SPLITTING_STOPS = ("<|eom|>", "<|eom_id|>", "<|end_of_message|>")


class ScenarioLength(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    input_tokens: int
    output_tokens: int


class PreflightInput(BaseModel):
    """What the run is about to ask of the server (all optional)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    uses_tools: bool = False
    concurrency: list[int] = Field(default_factory=list)
    scenarios: list[ScenarioLength] = Field(default_factory=list)
    stop: list[str] = Field(default_factory=list)  # stop strings rigbench's requests will send
    served_context_tokens: int | None = None  # per request, as the live server reports it
    server_slots: int | None = None  # as the live server reports it


# -- parsing ------------------------------------------------------------------------------------

# short or alternative spelling -> canonical long flag
_LLAMACPP_ALIASES = {
    "-m": "--model", "-c": "--ctx-size", "-np": "--parallel", "-md": "--spec-draft-model",
    "--model-draft": "--spec-draft-model", "-ngl": "--n-gpu-layers", "-ctk": "--cache-type-k",
    "-ctv": "--cache-type-v", "-a": "--alias", "-fa": "--flash-attn", "-b": "--batch-size",
    "-ub": "--ubatch-size", "-t": "--threads", "-r": "--reverse-prompt",
}
_LLAMACPP_BARE = {"--jinja", "--no-jinja", "--metrics", "--kv-unified", "--no-kv-unified", "--cont-batching",
                  "--no-cont-batching", "--embeddings", "--no-webui", "--slots", "--no-slots", "-cb", "-kvu"}
_VLLM_BARE = {"--enable-auto-tool-choice", "--trust-remote-code", "--enforce-eager", "--enable-prefix-caching",
              "--no-enable-prefix-caching", "--enable-chunked-prefill", "--no-enable-chunked-prefill",
              "--disable-log-requests", "--enable-log-requests", "--disable-log-stats"}
_SGLANG_BARE = {"--enable-metrics", "--trust-remote-code", "--disable-radix-cache", "--enable-torch-compile",
                "--disable-cuda-graph", "--skip-server-warmup", "--enable-mixed-chunk"}


def parse_command(command: str | Sequence[str]) -> ServingCommand:
    """Read a vLLM, SGLang or llama-server command line (a string or an argv list)."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    engine = _engine_of(argv)
    bare = {"llamacpp": _LLAMACPP_BARE, "vllm": _VLLM_BARE, "sglang": _SGLANG_BARE}.get(engine, set())
    aliases = _LLAMACPP_ALIASES if engine == "llamacpp" else {}
    start = _options_start(argv, engine)
    options: dict[str, str | bool] = {}
    positional: list[str] = []
    i = start
    while i < len(argv):
        tok = argv[i]
        if tok.startswith("-") and len(tok) > 1 and not _is_number(tok):
            name, eq, val = tok.partition("=")
            name = aliases.get(name, name)
            if eq:
                options[name] = val
            elif name in bare or tok in bare or i + 1 >= len(argv) or (
                    argv[i + 1].startswith("-") and not _is_number(argv[i + 1])):
                options[name] = True
            else:
                options[name] = argv[i + 1]
                i += 1
        else:
            positional.append(tok)
        i += 1
    model = None
    for key in ("--model", "--model-path"):
        if isinstance(options.get(key), str):
            model = str(options[key])
    if model is None and engine == "vllm" and positional:
        model = positional[0]  # `vllm serve MODEL`
    return ServingCommand(engine=engine, argv=argv, model=model, options=options)


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def _engine_of(argv: list[str]) -> Literal["vllm", "sglang", "llamacpp", "unknown"]:
    joined = " ".join(argv)
    if "llama-server" in joined or "llama_cpp.server" in joined:
        return "llamacpp"
    if "sglang" in joined:
        return "sglang"
    if "vllm" in joined:
        return "vllm"
    return "unknown"


def _options_start(argv: list[str], engine: str) -> int:
    """Index just after the program (and subcommand / -m module) part of argv."""
    for i, tok in enumerate(argv):
        if engine == "vllm" and tok == "serve":
            return i + 1
        if tok.endswith(("llama-server", "launch_server", "api_server")):
            return i + 1
    return 1 if argv else 0


def _int(options: dict[str, str | bool], *names: str) -> int | None:
    for n in names:
        v = options.get(n)
        if isinstance(v, str):
            try:
                return int(v)
            except ValueError:
                return None
    return None


def _has(options: dict[str, str | bool], *names: str) -> bool:
    return any(n in options for n in names)


# -- checks -------------------------------------------------------------------------------------


def preflight(command: ServingCommand | str | Sequence[str] | None, given: PreflightInput | None = None) -> PreflightReport:
    cmd = command if isinstance(command, ServingCommand) or command is None else parse_command(command)
    inp = given or PreflightInput()
    findings: list[PreflightFinding] = []
    if cmd is not None:
        if cmd.engine == "vllm":
            findings += _vllm_checks(cmd, inp)
        elif cmd.engine == "sglang":
            findings += _sglang_checks(cmd, inp)
        elif cmd.engine == "llamacpp":
            findings += _llamacpp_checks(cmd, inp)
        findings += _stop_checks(cmd, inp)
    findings += _context_checks(cmd, inp)
    findings += _slot_checks(cmd, inp)
    return PreflightReport(command=cmd, findings=findings)


def _vllm_spec(cmd: ServingCommand) -> dict[str, Any] | None:
    raw = cmd.options.get("--speculative-config") or cmd.options.get("--speculative_config")
    if not isinstance(raw, str):
        return None
    try:
        spec = json.loads(raw)
    except ValueError:
        return {"_unparsable": raw}
    return spec if isinstance(spec, dict) else {"_unparsable": raw}


def _vllm_checks(cmd: ServingCommand, inp: PreflightInput) -> list[PreflightFinding]:
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
        seqs = _int(o, "--max-num-seqs")
        budget = _int(o, "--max-num-batched-tokens")
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
    if inp.uses_tools and not (_has(o, "--enable-auto-tool-choice") and _has(o, "--tool-call-parser")):
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


def _sglang_checks(cmd: ServingCommand, inp: PreflightInput) -> list[PreflightFinding]:
    out: list[PreflightFinding] = []
    if inp.uses_tools and "--tool-call-parser" not in cmd.options:
        out.append(PreflightFinding(
            id="tools_without_parser", severity="error",
            problem="the run sends tools, but SGLang has no tool-call parser: calls arrive as plain text.",
            evidence="no --tool-call-parser on the command line",
            fix="--tool-call-parser <the model's parser>"))
    return out


def _llamacpp_checks(cmd: ServingCommand, inp: PreflightInput) -> list[PreflightFinding]:
    out: list[PreflightFinding] = []
    o = cmd.options
    synth = [f for f in ("--spec-synth-len", "--spec-synth-rates") if f in o]
    if synth:
        out.append(PreflightFinding(
            id="synthetic_acceptance", severity="error",
            problem=("synthetic speculative acceptance accepts drafted tokens at random instead of verifying "
                     "them: the output is invalid by design (llama.cpp: 'benchmarking only'). Speed numbers "
                     "from it describe no real rig."),
            evidence=" ".join(f"{f} {o[f]}" for f in synth),
            fix=f"remove {' and '.join(synth)}"))
    if inp.uses_tools and "--no-jinja" in o:
        out.append(PreflightFinding(
            id="tools_without_parser", severity="error",
            problem="the run sends tools, but --no-jinja disables the chat-template engine that llama-server "
                    "needs to format tools and parse tool calls.",
            evidence="--no-jinja", fix="drop --no-jinja (or pass --jinja on builds where it is not the default)"))
    return out


def _stop_checks(cmd: ServingCommand, inp: PreflightInput) -> list[PreflightFinding]:
    stops = list(inp.stop)
    o = cmd.options
    for flag in ("--override-generation-config",):
        raw = o.get(flag)
        if isinstance(raw, str):
            try:
                val = json.loads(raw)
                s = val.get("stop") if isinstance(val, dict) else None
                stops += [s] if isinstance(s, str) else list(s or [])
            except ValueError:
                pass
    for flag in ("--reverse-prompt", "--stop"):
        if isinstance(o.get(flag), str):
            stops.append(str(o[flag]))
    bad = [s for s in stops if s in TURN_SPLITTING_STOPS]
    if not bad:
        return []
    return [PreflightFinding(
        id="stop_splits_turn", severity="error" if inp.uses_tools else "warn",
        problem=("a stop string ends a message, not the turn: generation stops at the end of the thinking "
                 "channel or the first tool call, so tool calls never complete."),
        evidence=f"stop {bad}",
        fix="remove it; let the model's own end-of-turn token stop generation (vLLM: --generation-config auto)")]


def _served_context(cmd: ServingCommand | None, inp: PreflightInput) -> tuple[int | None, str]:
    if inp.served_context_tokens:
        return inp.served_context_tokens, "reported by the server"
    if cmd is None:
        return None, ""
    o = cmd.options
    if cmd.engine == "vllm":
        v = _int(o, "--max-model-len")
        return v, f"--max-model-len {v}"
    if cmd.engine == "sglang":
        v = _int(o, "--context-length")
        return v, f"--context-length {v}"
    if cmd.engine == "llamacpp":
        c = _int(o, "--ctx-size")
        np_ = _int(o, "--parallel")
        if c and np_ and np_ > 0 and "--kv-unified" not in o and "-kvu" not in o:
            return c // np_, f"--ctx-size {c} / --parallel {np_} slots = {c // np_} per request"
        return c, f"--ctx-size {c}"
    return None, ""


def _context_checks(cmd: ServingCommand | None, inp: PreflightInput) -> list[PreflightFinding]:
    ctx, how = _served_context(cmd, inp)
    if not ctx or not inp.scenarios:
        return []
    over = [s for s in inp.scenarios if s.input_tokens + s.output_tokens > ctx]
    if not over:
        return []
    listing = ", ".join(f"{s.name} ({s.input_tokens}+{s.output_tokens})" for s in over)
    refuses = (" vLLM (verified live on 0.32) refuses a prompt past --max-model-len with HTTP 400, but when "
               "only prompt + output is over it answers 200 with the output cut short and finish_reason "
               "'stop' (431 + 300 tokens at 512: 1 token), silently." if cmd is not None and cmd.engine == "vllm"
               else "")
    return [PreflightFinding(
        id="scenario_over_context", severity="error",
        problem="scenarios need more tokens than the server serves per request: they would fail or be "
                "truncated, and a truncated prompt measures a different workload." + refuses,
        evidence=f"served context {ctx} ({how}); over it: {listing}",
        fix="raise the served context (vLLM --max-model-len, SGLang --context-length, llama-server -c with "
            "fewer -np slots) or drop those scenarios")]


def _slot_checks(cmd: ServingCommand | None, inp: PreflightInput) -> list[PreflightFinding]:
    if not inp.concurrency:
        return []
    slots, how = inp.server_slots, "reported by the server"
    if slots is None and cmd is not None and cmd.engine == "llamacpp":
        slots = _int(cmd.options, "--parallel")
        how = f"--parallel {slots}"
        if slots is not None and slots <= 0:
            slots = None  # -1 = auto: the live server reports the real number
    if not slots:
        return []
    over = [c for c in inp.concurrency if c > slots]
    if not over:
        return []
    return [PreflightFinding(
        id="concurrency_over_slots", severity="warn",
        problem=f"client concurrency above the server's {slots} slots: the extra requests queue, so their "
                "latency includes waiting and aggregate tok/s stops scaling for a reason that is not the model.",
        evidence=f"{slots} slots ({how}); concurrency levels {over}",
        fix=f"start llama-server with -np {max(over)} (and -c scaled to keep per-slot context), or cap "
            f"concurrency at {slots}")]
