"""The two bases every stored type builds on: a frozen model, and a record with its kind and unit."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Frozen", "Record"]


class Frozen(BaseModel):
    """Immutable, and a field the model does not declare is an error, not silently kept.

    The base of every plain value model in rigbench, stored or not (settings, plan models, analysis
    results, emulator scripts): records is the lowest layer pydantic models live in, so every layer
    above imports it from `rigbench.records`."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Record(Frozen):
    """One line of a run's records file.

    `kind` names the type (each subclass narrows it to a literal, which discriminates `AnyRecord`);
    `unit_id` names the unit of work it belongs to, so the reader can supersede a unit measured
    again. Subclasses list `kind` and `unit_id` first so written lines keep their field order.
    """

    kind: str
    unit_id: str
