"""The few plain JSON calls adapters make to an engine's own (non-OpenAI) endpoints."""

from __future__ import annotations

from typing import Any

import aiohttp

from rigbench.client import ChatClient
from rigbench.errors import EndpointError

__all__ = ["fetch_json", "get_json", "has_metric_prefix", "post_json", "probe_json", "probe_text", "require_json"]


def _url(client: ChatClient, path: str) -> str:
    return client.server_root + path


async def get_json(client: ChatClient, path: str, *, timeout_s: float = 10.0) -> tuple[int, Any]:
    return await client.get_json(_url(client, path), timeout_s=timeout_s)


async def post_json(
    client: ChatClient, path: str, body: dict[str, Any], *, timeout_s: float = 60.0
) -> tuple[int, Any]:
    return await client.post_json(_url(client, path), body, timeout_s=timeout_s)


async def probe_json(client: ChatClient, path: str, *, timeout_s: float = 5.0) -> Any | None:
    """GET `path`; the parsed JSON body on a 200 with JSON, else None (absent, refused, not JSON)."""
    try:
        status, body = await get_json(client, path, timeout_s=timeout_s)
    except (aiohttp.ClientError, TimeoutError):
        return None
    return body if status == 200 and isinstance(body, dict | list) else None


async def probe_text(client: ChatClient, path: str, *, timeout_s: float = 5.0) -> str | None:
    """GET `path`; the body on a 200, else None (absent, refused, unreachable)."""
    try:
        status, text = await client.get_text(client.server_root + path, timeout_s=timeout_s)
    except (aiohttp.ClientError, TimeoutError):
        return None
    return text if status == 200 else None


def require_json(status: int, body: Any, *, engine: str, what: str, url: str, key: str | None = None) -> Any:
    """`body` if the call succeeded (and carries `key`), else an EndpointError saying what was seen."""
    if status == 200 and isinstance(body, dict) and (key is None or key in body):
        return body
    seen = body if isinstance(body, str) else repr(body)
    expected = f"a JSON object with {key!r}" if key else "a JSON object"
    raise EndpointError(
        f"{engine} {what} failed: {url} returned HTTP {status} with {seen[:300]}; expected {expected}. "
        f"Check that the server really is {engine} and that the model is loaded."
    )


async def fetch_json(client: ChatClient, path: str, body: dict[str, Any] | None = None, *, engine: str, what: str,
                     key: str | None = None) -> dict[str, Any]:
    """GET `path` (POST `body` when given) and the JSON object it answers, which must carry `key`; otherwise an
    EndpointError naming `engine`, `what` was being done, the URL and what came back (`require_json`)."""
    if body is None:
        status, got = await get_json(client, path)
    else:
        status, got = await post_json(client, path, body)
    return dict(require_json(status, got, engine=engine, what=what, url=_url(client, path), key=key))


async def has_metric_prefix(client: ChatClient, prefix: str) -> bool:
    """Whether the server's /metrics scrape has a metric named `prefix...` (False if it has no /metrics)."""
    try:
        status, text = await client.get_text(client.server_root + "/metrics", timeout_s=5.0)
    except (aiohttp.ClientError, TimeoutError):
        return False
    return status == 200 and f"\n{prefix}" in "\n" + text
