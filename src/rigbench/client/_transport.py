"""The one seam between `ChatClient` and the network for a streamed request: `StreamTransport`.

httpx's `AsyncBaseTransport.handle_async_request` is the model: one method between client and network.
`ChatClient` is built with one transport and keeps it (no string picks a path per request); it encodes
the body, schedules the send, retries refusals and watches the send lag, and hands each attempt to
`StreamTransport.handle_stream`, which sends it once and returns the `Accumulator` it filled. Shipped
transports: `StampedTransport` (the default: rigbench's own HTTP/1.1 reader, kernel arrival stamps where
the OS gives them) and `AiohttpTransport` (aiohttp's reader, user-space stamps; for comparison and as a
fallback). A test's stand-in server is a `StreamTransport` too, handed to a real `ChatClient`.
"""

from __future__ import annotations

import functools
import json
from abc import ABC, abstractmethod
from typing import Any, NamedTuple, Protocol

import aiohttp

from rigbench.client._accumulator import Accumulator
from rigbench.client._deadlines import Deadlines
from rigbench.records import ArrivalStamps, RequestError

__all__ = ["BoundClient", "StreamRequest", "StreamTransport", "deadline_error", "not_sse", "user_stamps"]


class BoundClient(Protocol):
    """What a transport reads of the `ChatClient` it serves (a protocol, so the two modules stay apart)."""

    base_url: str
    deadlines: Deadlines  # read per request: the idle and total deadlines may change between runs

    @property
    def max_connections(self) -> int: ...
    @property
    def authorization(self) -> str | None: ...  # the Authorization header value, None without an API key
    def url(self, url: str) -> str: ...  # a path under the base URL, made absolute
    def aiohttp_session(self) -> aiohttp.ClientSession: ...


class StreamRequest(NamedTuple):
    """One attempt of a streamed request, as the client hands it to its transport."""

    path: str  # under the client's base URL: "/chat/completions" or "/completions"
    data: bytes  # the JSON body, encoded once (`ChatClient.encode_stream`)

    def json(self) -> dict[str, Any]:
        """The body, decoded (for stand-in transports; the network transports send `data` as it is)."""
        body: dict[str, Any] = json.loads(self.data)
        return body


class StreamTransport(ABC):
    """Sends one streamed request and reads its answer into an `Accumulator` (see the module docstring).

    `handle_stream` is the only method a transport must write. It never raises for a failure of the
    server (a refusal, a broken stream, a deadline): that becomes the accumulator's `error`, with the
    stamps taken so far (`sent_ns` at least). `bind` gives it the client it serves (base URL, deadlines,
    connection limit, credentials); `opened` says whether it holds connections, after which the client
    refuses to change the connect and read deadlines or the connection limit; `aclose` lets them go.
    """

    client: BoundClient | None = None

    def bind(self, client: BoundClient) -> None:
        if self.client is not None and self.client is not client:
            raise ValueError(f"{type(self).__name__} already serves the ChatClient of {self.client.base_url}; "
                             "give each ChatClient its own transport")
        self.client = client

    @property
    def opened(self) -> bool:
        return False

    @abstractmethod
    async def handle_stream(self, request: StreamRequest) -> Accumulator:
        """Send `request` once and return what its answer produced (retries are the client's)."""

    async def aclose(self) -> None:
        return None


def deadline_error(kind: str, deadlines: Deadlines, comments: int) -> RequestError:
    """The error of a request that passed its idle or total deadline (`Deadlines`)."""
    if kind == "total_timeout":
        return RequestError(kind="total_timeout", message=(
            f"the request ran longer than its total deadline of {deadlines.total_s:g} s (--request-timeout)"))
    return RequestError(kind="idle_timeout", message=(
        f"no generated token for {deadlines.idle_s:g} s (idle deadline, --idle-timeout)"
        + (f"; {comments} keep-alive comments in between" if comments else "")))


@functools.lru_cache(maxsize=16)
def user_stamps(reason: str | None) -> ArrivalStamps:
    """The (frozen) record of user-space stamps for one reason, made once rather than per request."""
    return ArrivalStamps(source="user", reason=reason)


def not_sse(ctype: str, status: int, text: str) -> RequestError:
    return RequestError(
        kind="not_openai",
        message=f"expected an SSE stream (text/event-stream), got Content-Type {ctype!r}",
        http_status=status,
        body=text,
    )
