"""What a test needs from the machine: bubblewrap, Chromium, Ray, a llama-server...

Under `CI=true` CI installs all of it (.ci/run), so a missing or failing need is a test failure;
elsewhere it is a skip that says what is missing. Every skip under CI is also checked against
tests/allowed_skips.txt (tests/skip_check.py).
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["IN_CI", "golden_update_requested", "missing", "missing_module", "requires"]

IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
_IN_CI_NOTE = " (CI=true: CI installs this, so its absence fails the test instead of skipping it)"


def missing(reason: str) -> NoReturn:
    """Inside a test or fixture: fail under CI, skip elsewhere, with `reason`."""
    if IN_CI:
        pytest.fail(reason + _IN_CI_NOTE, pytrace=False)
    pytest.skip(reason)


def missing_module(reason: str) -> NoReturn:
    """At module level: a collection error under CI, a skipped module elsewhere."""
    if IN_CI:
        pytest.fail(reason + _IN_CI_NOTE, pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def requires(ok: bool, reason: str) -> pytest.MarkDecorator:
    """A marker: the test runs only when `ok`; otherwise `missing(reason)` at its setup (tests/conftest.py)."""
    return pytest.mark.requires(ok=ok, reason=reason)


def golden_update_requested() -> bool:
    """Whether RIGBENCH_UPDATE_GOLDEN asks a golden test to rewrite its file. Under CI=true it
    refuses (the test fails saying so): a golden file that rewrites itself in CI checks nothing."""
    if not os.environ.get("RIGBENCH_UPDATE_GOLDEN"):
        return False
    if IN_CI:
        pytest.fail("RIGBENCH_UPDATE_GOLDEN is set under CI=true: golden files are never rewritten in CI. "
                    "Regenerate them locally, review the diff and commit it.", pytrace=False)
    return True
