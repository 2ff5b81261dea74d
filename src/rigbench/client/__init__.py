"""The one streaming OpenAI-compatible client (the `StreamResult`s it produces are `rigbench.records`)."""

from rigbench.client._accumulator import Accumulator
from rigbench.client._aiohttp import AiohttpTransport
from rigbench.client._client import ChatClient, EncodedBody
from rigbench.client._deadlines import Deadlines
from rigbench.client._loop import event_loop_name, run
from rigbench.client._retry import RetryPolicy
from rigbench.client._selfcheck import SelfCheckMonitor, current_monitor, use_monitor
from rigbench.client._stamped import StampedTransport
from rigbench.client._transport import StreamRequest, StreamTransport
from rigbench.client._url import is_loopback_url, redact_text, redact_url, url_has_userinfo

__all__ = [
    "Accumulator",
    "AiohttpTransport",
    "ChatClient",
    "Deadlines",
    "EncodedBody",
    "RetryPolicy",
    "SelfCheckMonitor",
    "StampedTransport",
    "StreamRequest",
    "StreamTransport",
    "current_monitor",
    "event_loop_name",
    "is_loopback_url",
    "redact_text",
    "redact_url",
    "run",
    "url_has_userinfo",
    "use_monitor",
]
