"""The keys a plan section takes, read off the models, for the message of a misspelt key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from pydantic import BaseModel

from rigbench.plan._models import Plan

__all__ = ["known_keys"]


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation can hold (through Optional, list, unions)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in get_args(annotation) for m in _models(a)]


def known_keys(loc: Sequence[int | str]) -> list[str]:
    """The keys of the mapping that holds the last part of `loc` (a pydantic error location under
    Plan); [] when the walk loses its way."""
    found: list[type[BaseModel]] = [Plan]
    for seg in loc[:-1]:
        if isinstance(seg, int):  # a list item: the same models
            continue
        fields = [m.model_fields[seg] for m in found if seg in m.model_fields]
        if not fields:  # a union's tag: narrow to the model of that kind, if one says so
            tagged = [m for m in found if (k := m.model_fields.get("kind")) is not None and k.default == seg]
            found = tagged or found
            continue
        found = [m for f in fields for m in _models(f.annotation)]
        if not found:
            return []
    return sorted({k for m in found for k in m.model_fields})
