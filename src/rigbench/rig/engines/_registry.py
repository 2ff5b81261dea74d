"""Engine name -> engine module; the one registry every caller reaches engines through.

Engines come from three places, all through one path (`_add`, the same checks for each):
rigbench's own (`_BUILTIN`), installed packages that declare an entry point in the
`rigbench.engines` group (found the first time the registry is read, in every process that reads it:
the CLI, a plan file's validation, a Ray worker), and `register_engine` at run time (a test's fake
engine). A package whose engine cannot be loaded (an import error, a protocol member missing, a name
already taken) is left out with one message naming the package (`engine_problems`); the other engines,
the built-ins first, are unaffected.
"""

from __future__ import annotations

import threading
from importlib.metadata import EntryPoint, entry_points
from typing import Literal, get_args

from rigbench.errors import UsageError
from rigbench.rig.engines._base import Engine, EngineAdapter
from rigbench.rig.engines._llamacpp import LLAMACPP
from rigbench.rig.engines._ollama import OLLAMA
from rigbench.rig.engines._sglang import SGLANG
from rigbench.rig.engines._vllm import VLLM

__all__ = ["ENGINE_NAMES", "ENTRY_POINT_GROUP", "EngineName", "builtin_engines", "engine_problem", "engine_problems",
           "engine_source", "get_adapter", "get_engine", "known_engines", "register_engine", "unregister_engine"]

EngineName = Literal["llamacpp", "vllm", "sglang", "ollama"]
ENGINE_NAMES: tuple[str, ...] = get_args(EngineName)
# Where an installed package declares its engine: `[project.entry-points."rigbench.engines"]`,
# `NAME = "module:ENGINE"` (an object or a class implementing the Engine protocol; NAME is its name).
ENTRY_POINT_GROUP = "rigbench.engines"

# In the order a server is identified and a command line matched: vLLM's marker is the bare word
# "vllm", which an SGLang command line can hold too (a model path), and its /version is a common
# path, so it is asked last; Ollama has no command-line markers (it is configured by environment).
# Engines from packages come after them.
_BUILTIN: tuple[Engine, ...] = (LLAMACPP, OLLAMA, SGLANG, VLLM)
_BUILTIN_SOURCE = "rigbench"
_engines: dict[str, Engine] = {}
_sources: dict[str, str] = {}  # engine name -> what added it: "rigbench", a package, or register_engine
_problems: dict[str, str] = {}  # entry-point name -> why its package's engine is left out
_loaded = False
_loading = threading.RLock()
# Launch kinds that are not engines (rig/_launch_spec.py), and the name of an undetected engine.
_RESERVED = frozenset({"command", "container", "endpoint", "unknown"})
# What an engine must have: every member of the Engine protocol (an engine need not subclass BaseEngine,
# whose defaults fill them in: a plain object missing one would only fail when first used, mid-run).
_MEMBERS = tuple(sorted(n for n in vars(Engine) if not n.startswith("_")))
# ...and of its adapter, whose facts (telemetry names, tokenizing, usage) are read mid-run
_ADAPTER_MEMBERS = tuple(sorted({n for n in vars(EngineAdapter) if not n.startswith("_")}
                                | set(EngineAdapter.__annotations__)))


def _registry() -> dict[str, Engine]:
    """The engines, the built-ins and the installed packages' loaded the first time it is read."""
    global _loaded
    with _loading:  # one thread loads (a Ray task's thread and its driver may ask at once)
        if not _loaded:
            _loaded = True  # first: a package that reads the registry while it is imported sees the built-ins
            for engine in _BUILTIN:
                _add(engine, _BUILTIN_SOURCE)
            for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
                _load_entry_point(ep)
    return _engines


def _package(ep: EntryPoint) -> str:
    dist = ep.dist
    return f"{dist.name} {dist.version}" if dist is not None else f"the package declaring {ep.value}"


def _load_entry_point(ep: EntryPoint) -> None:
    package = _package(ep)
    try:
        obj = ep.load()
        engine = obj() if isinstance(obj, type) else obj
    except Exception as e:  # any failure of someone else's import: reported, never a traceback
        why = f"importing {ep.value} failed: {type(e).__name__}: {e}"
    else:
        try:
            if getattr(engine, "name", None) != ep.name:
                raise UsageError(f"its entry point is named {ep.name!r} but the engine's name is "
                                 f"{getattr(engine, 'name', None)!r}; they must be the same")
            _add(engine, package)
            return
        except UsageError as e:
            why = str(e).removeprefix(f"cannot register engine {ep.name!r}: ")
        except Exception as e:  # e.g. its adapter() raises
            why = f"{type(e).__name__}: {e}"
    _problems[ep.name] = (f"the engine {ep.name!r} of the package {package} (entry point {ep.group}: {ep.value}) is "
                          f"left out: {why.rstrip('.')}. rigbench's own engines are unaffected; fix that package or "
                          f"uninstall it (docs/engines.md, 'Adding an engine').")


def engine_problems() -> tuple[str, ...]:
    """One message per installed engine package that could not be loaded (its name, why, what to do)."""
    _registry()
    return tuple(_problems.values())


def engine_problem(name: str) -> str | None:
    """Why the installed engine `name` is left out, if it is (see `engine_problems`)."""
    _registry()
    return _problems.get(name.lower())


def engine_source(name: str) -> str:
    """What added the engine `name`: "rigbench" for a built-in, else the package (name and version)."""
    engine = get_engine(name)
    return _sources.get(engine.name, "register_engine")


def builtin_engines() -> tuple[Engine, ...]:
    """rigbench's own engines, without reading installed packages: for texts made when the CLI starts
    (its help), which must not import every engine package for `rigbench --help`."""
    return _BUILTIN


def known_engines() -> tuple[Engine, ...]:
    """Every engine rigbench knows now, built-ins first, in the order command lines are matched."""
    return tuple(_registry().values())


def get_engine(name: str) -> Engine:
    """The engine for `name` ("llamacpp", "vllm", "sglang", "ollama", or an installed package's; "llama.cpp"
    also accepted)."""
    key = name.lower()
    for engine in _registry().values():
        if key == engine.name or key in engine.aliases:
            return engine
    if key in _problems:
        raise UsageError(_problems[key])
    raise UsageError(f"unknown engine {name!r}: rigbench knows {', '.join(_registry())}. For another "
                     "OpenAI-compatible server, attach to it with --endpoint and no engine; to add an engine, "
                     "install a package that declares one (docs/engines.md, 'Adding an engine').")


def get_adapter(name: str) -> EngineAdapter:
    """A fresh adapter for `name` (see `get_engine`)."""
    return get_engine(name).adapter()


def _add(engine: Engine, source: str) -> None:
    missing = [m for m in _MEMBERS if not hasattr(engine, m)]
    if missing:
        raise UsageError(f"cannot register engine {getattr(engine, 'name', engine)!r}: it lacks "
                         f"{', '.join(missing)} (every member of rigbench.rig.engines.Engine; docs/engines.md).")
    adapter = engine.adapter()
    missing = [m for m in _ADAPTER_MEMBERS if not hasattr(adapter, m)]
    if missing:
        raise UsageError(f"cannot register engine {engine.name!r}: its adapter lacks {', '.join(missing)} "
                         "(every member of rigbench.rig.engines.EngineAdapter; docs/engines.md).")
    taken = {n: _sources.get(e.name, "") for e in _engines.values() for n in (e.name, *e.aliases)}
    taken.update(dict.fromkeys(_RESERVED, _BUILTIN_SOURCE))
    clash = sorted(set(taken) & {engine.name, *engine.aliases})
    if clash:
        by = sorted({taken[n] for n in clash} - {""})
        raise UsageError(f"cannot register engine {engine.name!r}: {', '.join(clash)} already names an engine "
                         f"or a launch kind{' (of ' + ', '.join(by) + ')' if by else ''}.")
    kind = engine.launch_spec.model_fields.get("kind")
    if kind is None or kind.default != engine.name:
        # a plan's `launch: {kind: NAME}` finds the engine by this default
        raise UsageError(f"cannot register engine {engine.name!r}: its launch spec {engine.launch_spec.__name__} "
                         f"must declare `kind: Literal[{engine.name!r}] = {engine.name!r}`.")
    _engines[engine.name] = engine
    _sources[engine.name] = source


def register_engine(engine: Engine) -> None:
    """Make `engine` known under its name and aliases (and, for plan files, as a `launch:` kind);
    a name already taken, a member of the `Engine` protocol missing, or a launch spec whose `kind` is not
    the engine's name, is refused. An installed package declares its engine as an entry point instead
    (`ENTRY_POINT_GROUP`), so that every process finds it."""
    _registry()
    _add(engine, "register_engine")


def unregister_engine(name: str) -> None:
    """Forget a registered engine; the built-ins stay."""
    if any(e.name == name for e in _BUILTIN):
        raise UsageError(f"{name!r} is built into rigbench and cannot be unregistered")
    _registry().pop(name, None)
    _sources.pop(name, None)
