"""Suites turn a plan slice into records. Each is registered once (`SUITES`, suites/_registry.py: its
spec, suites/_spec.py); `build_suites` maps names from the CLI/plan to suites."""

from __future__ import annotations

from rigbench.suites._context import NullProgress, Progress, Suite, SuiteContext
from rigbench.suites._registry import SUITE_NAMES, SUITES, BuiltSuites, build_suites, suite_help, suite_spec
from rigbench.suites._settings import SuiteSettings
from rigbench.suites._spec import SuiteFlag, SuiteSpec

__all__ = ["SUITES", "SUITE_NAMES", "BuiltSuites", "NullProgress", "Progress", "Suite", "SuiteContext", "SuiteFlag",
           "SuiteSettings", "SuiteSpec", "build_suites", "suite_help", "suite_spec"]
