"""`rigbench run`'s load flags (`--rate`, `--sweep`, ...) as the load suite's settings, and the suites
they imply: a rate or a sweep measures speed as offered load, so it takes the speed suite's place."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["load_options", "load_suites"]

# `rigbench run` parameter -> LoadSettings field
_FIELDS = {"rate": "rate_rps", "arrival": "arrival", "burstiness": "burstiness", "duration": "duration_s",
           "requests": "requests", "max_concurrency": "max_concurrency", "sweep_points": "sweep_points",
           "slo": "slo", "slo_attainment": "slo_attainment", "input_tokens": "input_tokens",
           "output_tokens": "output_tokens", "trace": "trace",
           "sessions": "sessions", "turns": "turns"}


def load_options(o: Mapping[str, Any] | Any) -> dict[str, Any]:
    """The load settings given on the command line (the rest keep LoadSettings' defaults): from `rigbench
    run`'s parameters by name, or the typed options (`plan.RunOptions`) that carry them."""
    def get(name: str) -> Any:
        return o.get(name) if isinstance(o, Mapping) else getattr(o, name, None)

    out = {field: (str(get(flag)) if flag == "trace" else get(flag)) for flag, field in _FIELDS.items()
           if get(flag) is not None}
    if get("sweep"):
        out["sweep"] = True
    return out


def load_suites(names: list[str], load: dict[str, Any]) -> list[str]:
    """The suites to run: with a rate, a sweep or a trace, the load suite instead of the speed suite (or added)."""
    if not (load.get("rate_rps") is not None or load.get("sweep") or load.get("trace")) or "load" in names:
        return names
    return ["load" if n == "speed" else n for n in names] if "speed" in names else [*names, "load"]
