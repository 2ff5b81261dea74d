"""The quality suites' specs: MMLU-Pro, task packs and the effort sweep (suites/_spec.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.suites._context import Suite
from rigbench.suites._spec import SuiteFlag, SuiteSpec, comma_list, first, non_empty
from rigbench.suites.quality._mmlu import MMLUProSuite
from rigbench.suites.quality._pack_suite import EffortSweepSuite, PackSuite
from rigbench.suites.quality._settings import EffortSettings, MMLUProSettings, PackSettings

__all__ = ["EFFORT", "MMLU_PRO", "PACKS"]


def _mmlu_pro(settings: MMLUProSettings, names: Sequence[str]) -> tuple[Suite, dict[str, Any]]:
    return MMLUProSuite(settings), settings.model_dump(mode="json")


def _packs(settings: PackSettings, names: Sequence[str]) -> tuple[Suite, dict[str, Any]]:
    return PackSuite(settings), settings.model_dump(mode="json")


def _effort(settings: EffortSettings, names: Sequence[str]) -> tuple[Suite, dict[str, Any]]:
    return EffortSweepSuite(settings), settings.model_dump(mode="json")


MMLU_PRO = SuiteSpec(
    key="mmlu_pro", settings=MMLUProSettings, names=("quality", "mmlu_pro"), build=_mmlu_pro,
    flags=(SuiteFlag("mmlu_data", "data"), SuiteFlag("mmlu_questions", "questions_per_subject"),
           SuiteFlag("mmlu_subjects", "subjects", comma_list)))
PACKS = SuiteSpec(key="packs", settings=PackSettings, names=("packs",), build=_packs,
                  flags=(SuiteFlag("pack", "packs", non_empty),))
EFFORT = SuiteSpec(key="effort", settings=EffortSettings, names=("effort",), build=_effort,
                   flags=(SuiteFlag("pack", "pack", first), SuiteFlag("effort_levels", "levels", comma_list)))
