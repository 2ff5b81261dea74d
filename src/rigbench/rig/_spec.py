"""What every engine's launch spec shares, and the helpers its command-line builder uses.

Flag spellings are the engines' own and live in each engine's module; this module only knows
how a typed spec becomes an argv: options appended when set, `extra_args` last and never
repeating a flag the typed fields already set.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any, NamedTuple, Self

from pydantic import Field, field_validator

from rigbench.errors import UsageError
from rigbench.records import Input

__all__ = ["EngineSpec", "LaunchCommand", "Spec", "finish_argv", "opt"]


class Spec(Input):
    """The base of every engine spec: frozen, an undeclared field an error."""

    def check(self) -> None:
        """Fail before anything starts on what the spec alone can tell (default: nothing to tell)."""

    def sized(self, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> Self:
        """The spec with what it leaves out sized for the run (default: taken as given; the embedded rig
        sizes its context and slots)."""
        return self


class EngineSpec(Spec):
    kind: str  # the engine's name; each engine's spec narrows it to a Literal
    host: str = "127.0.0.1"
    port: int | None = None  # None: the engine's default port
    executable: list[str] | None = None  # None: the engine's usual command
    extra_args: list[str] = Field(default_factory=list)  # appended verbatim

    @field_validator("extra_args", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return shlex.split(v) if isinstance(v, str) else v

    @property
    def served_name(self) -> str | None:
        """The model name requests use, where the spec sets it (None: the first one the server lists)."""
        return None

    @property
    def engine_name(self) -> str:
        """The engine that launches it (`rigbench.rig.open_rig` asks that engine)."""
        return self.kind

    def describe(self) -> dict[str, Any]:
        """As run.json's `plan.rig` records it (a resume compares it)."""
        return {"mode": "launched", "engine": self.kind, "spec": self.model_dump(mode="json")}

    def sized_for_run(self, shapes: Iterable[tuple[int, int]], concurrency: Iterable[int]) -> Self:
        """This spec, made from `rigbench run` flags, with what the flags left out sized for the run's
        (input, output) token shapes and concurrency levels; a plan's spec is taken as written. Default:
        as it is."""
        return self


class LaunchCommand(NamedTuple):
    argv: list[str]
    env: dict[str, str]  # variables to add to the inherited environment


def opt(argv: list[str], flag: str, value: Any) -> None:
    if value is not None:
        argv += [flag, str(value)]


def finish_argv(engine: str, spec: EngineSpec, argv: list[str]) -> list[str]:
    """Append extra_args, refusing one that repeats a flag the typed config already set."""
    typed = {a.split("=", 1)[0] for a in argv if a.startswith("-")}
    clashes = sorted({a.split("=", 1)[0] for a in spec.extra_args if a.startswith("-")} & typed)
    if clashes:
        raise UsageError(
            f"extra_args repeats {', '.join(clashes)}, which the {engine} config already sets "
            f"(argv so far: {shlex.join(argv)}). Set it in one place only."
        )
    return argv + list(spec.extra_args)
