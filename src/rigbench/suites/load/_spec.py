"""The load suite's spec (suites/_spec.py): `rigbench run`'s load flags (`--rate`, `--sweep`, ...) listed
once, as its settings, and the suites they imply: a rate or a sweep measures speed as offered load, so it
takes the speed suite's place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.errors import UsageError
from rigbench.suites._context import Suite
from rigbench.suites._spec import SuiteFlag, SuiteSpec, only_when_on, text
from rigbench.suites.load._settings import LoadSettings
from rigbench.suites.load._suite import LoadSuite

__all__ = ["LOAD", "load_suites"]


def _build(settings: LoadSettings, names: Sequence[str]) -> tuple[Suite, dict[str, Any]]:
    missing = settings.missing()
    if missing:
        raise UsageError(missing + ".")
    return LoadSuite(settings), settings.as_dict()


LOAD = SuiteSpec(
    key="load", settings=LoadSettings, names=("load",), build=_build,
    flags=(SuiteFlag("rate", "rate_rps"), SuiteFlag("arrival", "arrival"), SuiteFlag("burstiness", "burstiness"),
           SuiteFlag("duration", "duration_s"), SuiteFlag("requests", "requests"),
           SuiteFlag("max_concurrency", "max_concurrency"), SuiteFlag("sweep_points", "sweep_points"),
           SuiteFlag("slo", "slo"), SuiteFlag("slo_attainment", "slo_attainment"),
           SuiteFlag("input_tokens", "input_tokens"), SuiteFlag("output_tokens", "output_tokens"),
           SuiteFlag("trace", "trace", text), SuiteFlag("sessions", "sessions"), SuiteFlag("turns", "turns"),
           SuiteFlag("sweep", "sweep", only_when_on)))


def load_suites(names: list[str], load: dict[str, Any]) -> list[str]:
    """The suites to run: with a rate, a sweep or a trace, the load suite instead of the speed suite (or added)."""
    if not (load.get("rate_rps") is not None or load.get("sweep") or load.get("trace")) or "load" in names:
        return names
    return ["load" if n == "speed" else n for n in names] if "speed" in names else [*names, "load"]
