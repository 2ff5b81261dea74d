"""The one streaming OpenAI-compatible client (the `StreamResult`s it produces are `rigbench.records`)."""

from rigbench.client._client import ChatClient, EncodedBody
from rigbench.client._deadlines import Deadlines
from rigbench.client._loop import event_loop_name, run
from rigbench.client._retry import RetryPolicy
from rigbench.client._selfcheck import SelfCheckMonitor, current_monitor, use_monitor
from rigbench.client._url import is_loopback_url, redact_text, redact_url, url_has_userinfo

__all__ = [
    "ChatClient",
    "Deadlines",
    "EncodedBody",
    "RetryPolicy",
    "SelfCheckMonitor",
    "current_monitor",
    "event_loop_name",
    "is_loopback_url",
    "redact_text",
    "redact_url",
    "run",
    "url_has_userinfo",
    "use_monitor",
]
