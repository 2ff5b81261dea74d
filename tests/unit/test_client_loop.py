"""The client's loop runner: uvloop when present, the standard loop when asked."""

from __future__ import annotations

import asyncio

import pytest

from rigbench.client import event_loop_name, run


async def _loop_class() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_runs_on_uvloop_when_installed() -> None:
    pytest.importorskip("uvloop")
    assert event_loop_name() == "uvloop"
    assert run(_loop_class()).startswith("uvloop")


def test_standard_loop_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGBENCH_EVENT_LOOP", "asyncio")
    assert event_loop_name() == "asyncio"
    assert run(_loop_class()).startswith("asyncio")

