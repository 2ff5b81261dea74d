"""The bases every stored type builds on: a frozen model, and a record with its kind and unit; and the
base of every model of outside input (`Input`), whose numbers and booleans are strict."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic_core import CoreSchema

__all__ = ["Frozen", "Input", "Record"]


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


_STRICT_TYPES = frozenset({"int", "float", "bool"})
# Keys of a core schema that hold values, not schemas: a default value is left as it is.
_NOT_SCHEMAS = frozenset({"metadata", "default", "serialization", "ref", "cls", "config", "pydantic_js_functions"})


def _strict_scalars(schema: Any) -> None:
    """Mark every int, float and bool schema in `schema` strict; a nested model that is no Input keeps its
    own rules (a stored record inside a setting is read as stored)."""
    if isinstance(schema, dict):
        kind = schema.get("type")
        if isinstance(kind, str) and kind in _STRICT_TYPES:
            schema["strict"] = True
        if kind == "model" and not getattr(schema.get("cls"), "_strict_input", False):
            return
        for key, value in schema.items():
            if key not in _NOT_SCHEMAS:
                _strict_scalars(value)
    elif isinstance(schema, list | tuple):
        for value in schema:
            _strict_scalars(value)

class Input(Frozen):
    """A model of outside input: a plan file's section, a suite's settings, a rig spec, a task pack, an
    emulator script. Its `int`, `float` and `bool` values are strict wherever they sit (a field, a list
    item, a dict value, a nested model): `true` is no count (lax pydantic reads it as 1), `1` is no yes,
    `"5"` and `5.0` are no count; a float takes an int. The rule every door shares (rigbench.inputs)."""

    _strict_input: ClassVar[bool] = True  # read by _strict_scalars, before the name Input exists

    @classmethod
    def __get_pydantic_core_schema__(cls, source: type[BaseModel], handler: GetCoreSchemaHandler) -> CoreSchema:
        schema = handler(source)
        _strict_scalars(schema)
        return schema

