"""The one streaming OpenAI-compatible client and the raw records it produces."""

from rigbench.client._client import ChatClient
from rigbench.client._loop import event_loop_name, run
from rigbench.client._selfcheck import SelfCheckMonitor, current_monitor

__all__ = ["ChatClient", "SelfCheckMonitor", "current_monitor", "event_loop_name", "run"]
