"""The one sandbox for model-written code: code-pack functions and agent-task projects alike.

A program runs on a working copy only (bubblewrap: the rest of the host is not there), without
network, under CPU, memory, wall-time, file-size and process-count limits. Where the machine cannot
confine it, it runs only when the user passed --allow-unconfined, and its results say "unconfined".
"""

from rigbench.sandbox._confine import Confinement, confinement
from rigbench.sandbox._function import CaseOutcome, FunctionResult, run_function_tests, same_json
from rigbench.sandbox._pytest import TestOutcome, run_pytest
from rigbench.sandbox._run import Limits, RunOutcome, SandboxUnavailable, require_confinement, run_confined
from rigbench.sandbox._verdict import GradedTests, grade_pytest
from rigbench.sandbox._workdir import GRADER_NEVER_COPIES, PathRefused, Workdir

__all__ = [
    "GRADER_NEVER_COPIES",
    "CaseOutcome",
    "Confinement",
    "FunctionResult",
    "GradedTests",
    "Limits",
    "PathRefused",
    "RunOutcome",
    "SandboxUnavailable",
    "TestOutcome",
    "Workdir",
    "confinement",
    "grade_pytest",
    "require_confinement",
    "run_confined",
    "run_function_tests",
    "run_pytest",
    "same_json",
]
