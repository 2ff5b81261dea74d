"""The speed suite's spec: its key, settings, `rigbench run` options and builder (suites/_spec.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.suites._context import Suite
from rigbench.suites._spec import SuiteFlag, SuiteSpec, comma_list
from rigbench.suites.speed._settings import SpeedSettings
from rigbench.suites.speed._suite import SpeedSuite

__all__ = ["SPEED"]


def _build(settings: SpeedSettings, names: Sequence[str]) -> tuple[Suite, dict[str, Any]]:
    return SpeedSuite(settings), settings.as_dict()


SPEED = SuiteSpec(
    key="speed", settings=SpeedSettings, names=("speed",), build=_build,
    flags=(SuiteFlag("profile", "profile"), SuiteFlag("scenarios", "scenarios", comma_list),
           SuiteFlag("repetitions", "repetitions"), SuiteFlag("warmup", "warmup"),
           SuiteFlag("concurrency", "concurrency"), SuiteFlag("max_requests", "max_requests")))
