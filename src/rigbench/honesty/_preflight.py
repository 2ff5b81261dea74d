"""Preflight: catch serving-configuration traps before a run, from the engine's command line.

Each check names the problem, the evidence (the flags it read, or their defaults) and the fix.
The traps come from the seeds: a DFlash drafter that overruns vLLM's token budget and "reads
exactly like a hardware incompatibility" (seed 000); a stop token that ends the turn before tool
calls complete, and `--generation-config auto` being needed for the model's own stop tokens
(seed 003). `rigbench check -- <command line>` prints these; `rigbench run` runs them before
launching a rig and records the report (kind="preflight").

Engine-specific rules (vLLM's token budget, llama.cpp's synthetic acceptance, ...) live in each
engine's module and are collected through the `Engine` protocol; the rules here hold for any
engine: a stop string that splits a turn, scenarios past the served context, concurrency past
the server's slots.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from rigbench.errors import UsageError
from rigbench.records import PreflightFinding, PreflightReport, ServingCommand
from rigbench.rig.engines import (
    Engine,
    FlagSyntax,
    PreflightInput,
    ScenarioLength,
    get_engine,
    known_engines,
    parse_flags,
)
from rigbench.sizing import fits_in_context

__all__ = ["PreflightInput", "ScenarioLength", "parse_command", "preflight"]

# Stop strings that end a *message*, not a *turn*: stopping there cuts a turn that goes on to call
# tools (seed 003: `<|eom|>` ends the thinking channel; Llama 3.1 ends a tool-call message with
# `<|eom_id|>` and expects the tool result next).
TURN_SPLITTING_STOPS = ("<|eom|>", "<|eom_id|>", "<|end_of_message|>")


# -- parsing ------------------------------------------------------------------------------------


def parse_command(command: str | Sequence[str]) -> ServingCommand:
    """Read an engine command line (a string or an argv list) with its engine's flag syntax."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    engine = _engine_of(argv)
    options, positional = parse_flags(argv, engine.flag_syntax if engine else _unknown_syntax())
    model = None
    for key in ("--model", "--model-path"):
        if isinstance(options.get(key), str):
            model = str(options[key])
    if model is None and engine is not None and engine.flag_syntax.model_positional and positional:
        model = positional[0]
    return ServingCommand(engine=engine.name if engine else "unknown", argv=argv, model=model, options=options)


def _engine_of(argv: list[str]) -> Engine | None:
    joined = " ".join(argv)
    for engine in known_engines():
        if any(m in joined for m in engine.flag_syntax.markers):
            return engine
    return None


def _unknown_syntax() -> FlagSyntax:
    # A program no engine claims: options start after any engine's program name, and no flag is
    # known to be bare.
    return FlagSyntax(markers=(), programs=tuple(p for e in known_engines() for p in e.flag_syntax.programs))


def _engine(cmd: ServingCommand | None) -> Engine | None:
    if cmd is None or cmd.engine == "unknown":
        return None
    try:
        return get_engine(cmd.engine)
    except UsageError:  # read while an engine was registered that is gone now: its rules are too
        return None


# -- checks -------------------------------------------------------------------------------------


def preflight(command: ServingCommand | str | Sequence[str] | None, given: PreflightInput | None = None) -> PreflightReport:
    cmd = command if isinstance(command, ServingCommand) or command is None else parse_command(command)
    inp = given or PreflightInput()
    engine = _engine(cmd)
    findings: list[PreflightFinding] = []
    if cmd is not None:
        if engine is not None:
            findings += engine.preflight_rules(cmd, inp)
        findings += _stop_checks(cmd, inp)
    findings += _context_checks(cmd, engine, inp)
    findings += _slot_checks(cmd, engine, inp)
    return PreflightReport(command=cmd, findings=findings)


def _stop_checks(cmd: ServingCommand, inp: PreflightInput) -> list[PreflightFinding]:
    # Every engine's stop flags are read: a command line rigbench cannot name may carry any of them.
    # Reversed match order lists vLLM's before llama.cpp's, as the evidence always has.
    stops = list(inp.stop) + [s for e in reversed(known_engines()) for s in e.stop_strings(cmd.options)]
    bad = [s for s in stops if s in TURN_SPLITTING_STOPS]
    if not bad:
        return []
    return [PreflightFinding(
        id="stop_splits_turn", severity="error" if inp.uses_tools else "warn",
        problem=("a stop string ends a message, not the turn: generation stops at the end of the thinking "
                 "channel or the first tool call, so tool calls never complete."),
        evidence=f"stop {bad}",
        fix="remove it; let the model's own end-of-turn token stop generation" + _stop_fixes())]


def _stop_fixes() -> str:
    """Each engine's way to stop on the model's own end-of-turn tokens, where it needs a flag for it."""
    fixes = [e.model_stop_fix for e in reversed(known_engines()) if e.model_stop_fix]
    return f" ({', '.join(fixes)})" if fixes else ""


def _served_context(cmd: ServingCommand | None, engine: Engine | None, inp: PreflightInput) -> tuple[int | None, str]:
    if inp.served_context_tokens:
        return inp.served_context_tokens, "reported by the server"
    if cmd is None or engine is None:
        return None, ""
    value, how = engine.served_context(cmd.options)
    return value, how


def _context_checks(cmd: ServingCommand | None, engine: Engine | None, inp: PreflightInput) -> list[PreflightFinding]:
    ctx, how = _served_context(cmd, engine, inp)
    if not ctx or not inp.scenarios:
        return []
    over = [s for s in inp.scenarios if not fits_in_context(s.input_tokens, s.output_tokens, ctx)]
    if not over:
        return []
    listing = ", ".join(f"{s.name} ({s.input_tokens}+{s.output_tokens})" for s in over)
    note = engine.context_overrun_note if engine is not None else ""
    fix = f"raise the served context ({', '.join(_context_fixes())}) or drop those scenarios"
    if len(over) < len(inp.scenarios):
        # a run skips them, with the reason, and measures the others: a note, not a verdict (issue 30 item 6)
        return [PreflightFinding(
            id="scenario_over_context", severity="warn",
            problem="scenarios need more tokens than the server serves per request: a run skips them (listed "
                    "as skipped, with the reason) and measures the others; sent, they would fail or be "
                    "truncated, and a truncated prompt measures a different workload." + note,
            evidence=f"served context {ctx} ({how}); over it: {listing}", fix=fix)]
    return [PreflightFinding(
        id="scenario_over_context", severity="error",
        problem="every scenario needs more tokens than the server serves per request, so no speed figure can "
                "be measured: sent, they would fail or be truncated, and a truncated prompt measures a "
                "different workload." + note,
        evidence=f"served context {ctx} ({how}); over it: {listing}", fix=fix)]


def _context_fixes() -> list[str]:
    """Each engine's way to raise its served context, in the order command lines are matched back to front."""
    return [e.context_fix for e in reversed(known_engines()) if e.context_fix]


def _slot_checks(cmd: ServingCommand | None, engine: Engine | None, inp: PreflightInput) -> list[PreflightFinding]:
    if not inp.concurrency:
        return []
    slots, how = inp.server_slots, "reported by the server"
    if slots is None and cmd is not None and engine is not None:
        slots, how = engine.flag_slots(cmd.options)
    if not slots:
        return []
    over = [c for c in inp.concurrency if c > slots]
    if not over:
        return []
    return [PreflightFinding(
        id="concurrency_over_slots", severity="warn",
        problem=f"client concurrency above the server's {_slots(slots)}: the extra requests queue, so their "
                "latency includes waiting and aggregate tok/s stops scaling for a reason that is not the model.",
        evidence=f"{_slots(slots)} ({how}); concurrency levels {over}",
        fix=f"{_slots_fix(engine or _engine_named(inp.engine), max(over))}, or cap concurrency at {slots}")]


def _engine_named(name: str | None) -> Engine | None:
    try:
        return get_engine(name) if name and name != "unknown" else None
    except UsageError:
        return None


def _slots_fix(engine: Engine | None, slots: int) -> str:
    """The engine's way to serve `slots` requests at once; unknown engine: every engine's way."""
    if engine is not None and engine.slots_fix(slots):
        return engine.slots_fix(slots)
    fixes = [e.slots_fix(slots) for e in known_engines() if e.slots_fix(slots)]
    return f"serve more requests at once ({'; '.join(fixes)})"


def _slots(n: int) -> str:
    return f"{n} slot" if n == 1 else f"{n} slots"
