"""Engine name -> engine module; the one place that lists the engines rigbench knows.

The built-in engines are listed here; `register_engine` adds another at run time (a plugin, or a
test's fake engine), which every caller then reaches through `get_engine` like the built-ins.
"""

from __future__ import annotations

from typing import Literal, get_args

from rigbench.errors import UsageError
from rigbench.rig.engines._base import Engine, EngineAdapter
from rigbench.rig.engines._llamacpp import LLAMACPP
from rigbench.rig.engines._ollama import OLLAMA
from rigbench.rig.engines._sglang import SGLANG
from rigbench.rig.engines._vllm import VLLM

__all__ = ["ENGINE_NAMES", "EngineName", "get_adapter", "get_engine", "known_engines", "register_engine",
           "unregister_engine"]

EngineName = Literal["llamacpp", "vllm", "sglang", "ollama"]
ENGINE_NAMES: tuple[str, ...] = get_args(EngineName)

# In the order a server is identified and a command line matched: vLLM's marker is the bare word
# "vllm", which an SGLang command line can hold too (a model path), and its /version is a common
# path, so it is asked last; Ollama has no command-line markers (it is configured by environment).
_BUILTIN: tuple[Engine, ...] = (LLAMACPP, OLLAMA, SGLANG, VLLM)
_engines: dict[str, Engine] = {e.name: e for e in _BUILTIN}
# Launch kinds that are not engines (rig/_launch_spec.py), and the name of an undetected engine.
_RESERVED = frozenset({"command", "container", "endpoint", "unknown"})
# What an engine must have: every member of the Engine protocol (an engine is a plain object, not a
# subclass, so a missing one would only fail when first used, mid-run).
_MEMBERS = tuple(sorted(n for n in vars(Engine) if not n.startswith("_")))
# ...and of its adapter, whose facts (telemetry names, tokenizing, usage) are read mid-run
_ADAPTER_MEMBERS = tuple(sorted({n for n in vars(EngineAdapter) if not n.startswith("_")}
                                | set(EngineAdapter.__annotations__)))


def known_engines() -> tuple[Engine, ...]:
    """Every engine rigbench knows now, built-ins first, in the order command lines are matched."""
    return tuple(_engines.values())


def get_engine(name: str) -> Engine:
    """The engine for `name` ("llamacpp", "vllm", "sglang", "ollama"; "llama.cpp" also accepted)."""
    key = name.lower()
    for engine in _engines.values():
        if key == engine.name or key in engine.aliases:
            return engine
    names = [*ENGINE_NAMES, *(n for n in _engines if n not in ENGINE_NAMES)]
    raise UsageError(f"unknown engine {name!r}: rigbench knows {', '.join(names)}. "
                     "For another OpenAI-compatible server, attach to it with --endpoint and no engine.")


def get_adapter(name: str) -> EngineAdapter:
    """A fresh adapter for `name` (see `get_engine`)."""
    return get_engine(name).adapter()


def register_engine(engine: Engine) -> None:
    """Make `engine` known under its name and aliases (and, for plan files, as a `launch:` kind);
    a name already taken, a member of the `Engine` protocol missing, or a launch spec whose `kind` is not
    the engine's name, is refused."""
    missing = [m for m in _MEMBERS if not hasattr(engine, m)]
    if missing:
        raise UsageError(f"cannot register engine {getattr(engine, 'name', engine)!r}: it lacks "
                         f"{', '.join(missing)} (every member of rigbench.rig.engines.Engine; docs/engines.md).")
    adapter = engine.adapter()
    missing = [m for m in _ADAPTER_MEMBERS if not hasattr(adapter, m)]
    if missing:
        raise UsageError(f"cannot register engine {engine.name!r}: its adapter lacks {', '.join(missing)} "
                         "(every member of rigbench.rig.engines.EngineAdapter; docs/engines.md).")
    taken = {n for e in _engines.values() for n in (e.name, *e.aliases)} | _RESERVED
    clash = sorted(taken & {engine.name, *engine.aliases})
    if clash:
        raise UsageError(f"cannot register engine {engine.name!r}: {', '.join(clash)} already names an engine "
                         "or a launch kind.")
    kind = engine.launch_spec.model_fields.get("kind")
    if kind is None or kind.default != engine.name:
        # a plan's `launch: {kind: NAME}` finds the engine by this default
        raise UsageError(f"cannot register engine {engine.name!r}: its launch spec {engine.launch_spec.__name__} "
                         f"must declare `kind: Literal[{engine.name!r}] = {engine.name!r}`.")
    _engines[engine.name] = engine


def unregister_engine(name: str) -> None:
    """Forget a registered engine; the built-ins stay."""
    if any(e.name == name for e in _BUILTIN):
        raise UsageError(f"{name!r} is built into rigbench and cannot be unregistered")
    _engines.pop(name, None)
