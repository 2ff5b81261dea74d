"""What a conformance probe is: an object with a name and a family whose `run` turns a probe
session into a `ProbeResult`. The suite runs any object that has that shape, in the order of the
registry it is given; nothing registers itself on import.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import Field, ValidationError

from rigbench.errors import ProbeError
from rigbench.records import Exchange, Frozen, ProbeVerdict

if TYPE_CHECKING:
    from rigbench.suites.agent.probes._session import ProbeSession

__all__ = ["FunctionProbe", "Probe", "ProbeRegistry", "ProbeResult", "accept_result", "result"]


class ProbeResult(Frozen):
    """A probe's verdict, the sentence that justifies it, the facts it rests on and the exchanges
    that show them."""

    verdict: ProbeVerdict
    detail: str = Field(min_length=1)  # why this verdict, in one sentence a user can act on
    observed: dict[str, Any] = Field(default_factory=dict)
    exchanges: list[Exchange] = Field(default_factory=list)


def result(verdict: ProbeVerdict, detail: str, observed: dict[str, Any], *exchanges: Exchange) -> ProbeResult:
    """Shorthand for the shipped probes: the verdict, its sentence, its facts, then its exchanges."""
    return ProbeResult(verdict=verdict, detail=detail, observed=observed, exchanges=list(exchanges))


@runtime_checkable
class Probe(Protocol):
    """One check of what an agent framework asks of a server. `name` is the probe's unit id
    (agent/probe/<name>) in the run, so it must stay stable once runs were stored with it."""

    @property
    def name(self) -> str: ...

    @property
    def family(self) -> str: ...

    async def run(self, session: ProbeSession) -> ProbeResult: ...


@dataclass(frozen=True)
class FunctionProbe:
    """A probe written as one async function of the session (how the shipped probes are written)."""

    name: str
    family: str
    check: Callable[[ProbeSession], Awaitable[ProbeResult]]

    async def run(self, session: ProbeSession) -> ProbeResult:
        return await self.check(session)


def accept_result(probe: Probe, result: object) -> ProbeResult:
    """The probe's result, re-validated: a malformed one is rigbench's (or the probe author's) bug,
    never stored as if the server had produced it."""
    what = f"probe {probe.name!r} (family {probe.family!r})"
    if not isinstance(result, ProbeResult):
        raise ProbeError(
            f"{what} returned {type(result).__name__} {_clip(result)}, not a ProbeResult; "
            "return ProbeResult(verdict=..., detail=..., observed=..., exchanges=...) from its run()")
    try:  # model_construct() or a mutated copy can carry fields that never passed validation
        return ProbeResult.model_validate(dict(result))
    except ValidationError as e:
        raise ProbeError(f"{what} returned an invalid ProbeResult: {_errors(e)}; verdict must be one of "
                         "pass, fail, silently_ignored, not_applicable and detail a non-empty sentence") from None


def _clip(obj: object) -> str:
    text = repr(obj)
    return text if len(text) <= 120 else text[:119] + "…"


def _errors(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']} (got {_clip(err.get('input'))})"
                     for err in e.errors())


class ProbeRegistry:
    """The probes a suite runs, in order (a later probe may judge an earlier one's exchanges).
    Checked when built: every entry has the Probe shape and a unique name."""

    def __init__(self, probes: Iterable[Probe]) -> None:
        self._probes: tuple[Probe, ...] = tuple(probes)
        seen: set[str] = set()
        for p in self._probes:
            if not isinstance(p, Probe) or not inspect.iscoroutinefunction(p.run):
                raise ProbeError(f"{p!r} is not a probe: a probe has `name`, `family` and an async "
                                 "`run(session) -> ProbeResult`")
            if not p.name or "/" in p.name:
                raise ProbeError(f"probe name {p.name!r} (family {p.family!r}) cannot be a unit id: it must be "
                                 "non-empty and hold no '/'")
            if p.name in seen:
                raise ProbeError(f"two probes are named {p.name!r}: names are unit ids in the run and must be "
                                 "unique; rename one")
            seen.add(p.name)

    def __iter__(self) -> Iterator[Probe]:
        return iter(self._probes)

    def __len__(self) -> int:
        return len(self._probes)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self._probes)

    @property
    def families(self) -> dict[str, tuple[str, ...]]:
        """Family -> its probes' names, in registry order."""
        out: dict[str, list[str]] = {}
        for p in self._probes:
            out.setdefault(p.family, []).append(p.name)
        return {f: tuple(n) for f, n in out.items()}
