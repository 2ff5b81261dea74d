"""The client's loop runner: uvloop when present, the standard loop when asked."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import pytest

from rigbench.client import ChatClient, _http, event_loop_name, run
from rigbench.testing import Delay, Emulator, EmulatorScript
from tests.needs import missing


async def _loop_class() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_runs_on_uvloop_when_installed() -> None:
    if importlib.util.find_spec("uvloop") is None:
        missing("uvloop is not installed: pip install 'rigbench[fast]' (.ci/run does)")
    assert event_loop_name() == "uvloop"
    assert run(_loop_class()).startswith("uvloop")


def test_standard_loop_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGBENCH_EVENT_LOOP", "asyncio")
    assert event_loop_name() == "asyncio"
    assert run(_loop_class()).startswith("asyncio")



@pytest.mark.parametrize("opener", ["sock_connect", "create_connection"])  # kernel-stamped / Protocol path
async def test_a_ctrl_c_that_lands_as_a_connection_opens_is_not_lost(monkeypatch: pytest.MonkeyPatch,
                                                                    opener: str) -> None:
    # Ctrl-C cancels the run's main task. On Python 3.11, asyncio.wait_for returned the result
    # when the cancel landed as its inner connect completed: the cancel was lost, the run went on
    # and exited 0 as complete (a CI run of tests/live/test_resume_live.py saw exit 0 for 130).
    # The client must let the cancel through wherever it lands.
    async with Emulator(EmulatorScript(ttft=Delay(mean_ms=1), itl=Delay(mean_ms=0.2), output_tokens=4)) as emu, \
            ChatClient(emu.url) as client:
        loop = asyncio.get_running_loop()
        if opener == "create_connection":
            monkeypatch.setattr(_http, "KERNEL_STAMPS", False)
        real = getattr(loop, opener)
        me = asyncio.current_task()
        assert me is not None

        async def connect_then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
            opened = await real(*args, **kwargs)
            me.cancel()  # the signal arrives just as the connection is up
            return opened

        monkeypatch.setattr(loop, opener, connect_then_ctrl_c)
        with pytest.raises(asyncio.CancelledError):
            await client.stream_chat({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        me.uncancel()  # the test goes on to close the client and the emulator
