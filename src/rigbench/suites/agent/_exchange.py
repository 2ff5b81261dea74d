"""Sending one agent request through the one client and keeping it as evidence."""

from __future__ import annotations

import json
import time
from typing import Any, NamedTuple

from rigbench.client import ChatClient
from rigbench.records import Exchange, RequestError, StreamResult
from rigbench.store import RunWriter

__all__ = ["Reply", "canonical_calls", "parse_arguments", "send"]

_INLINE_LIMIT_CHARS = 8000


class Reply(NamedTuple):
    exchange: Exchange
    message: dict[str, Any]  # the assistant message to append to the conversation


def _keep(writer: RunWriter, name: str, obj: Any) -> tuple[Any | None, str | None]:
    text = json.dumps(obj, ensure_ascii=False)
    if len(text) <= _INLINE_LIMIT_CHARS:
        return obj, None
    return None, writer.blob(name, text)


async def send(
    client: ChatClient,
    writer: RunWriter,
    body: dict[str, Any],
    *,
    streamed: bool = True,
    timeout_s: float = 600.0,
) -> Reply:
    """One chat completion, streamed (the default, as agents use it) or not."""
    req, req_blob = _keep(writer, "request.json", body)
    t0 = time.perf_counter()
    if streamed:
        r = await client.stream_chat(body)
        ex = Exchange(streamed=True, request=req, request_blob=req_blob, elapsed_s=time.perf_counter() - t0,
                      result=r.model_copy(update={"tool_calls": [dict(c) for c in r.tool_calls]}))
    else:
        payload = dict(body)
        payload["stream"] = False
        # under --retry-on a refusal is sent again, as a streamed one is; the stamps are the answered attempt's
        reply = await client.complete_chat(payload, timeout_s=timeout_s)
        ex = _from_json(writer, reply.status, reply.data, req, req_blob, time.perf_counter() - t0, reply.sent_ns,
                        reply.done_ns)
        ex = ex.model_copy(update={"result": ex.result.model_copy(update={
            "retries": list(reply.retries), "retry_stopped": reply.retry_stopped})})
    msg: dict[str, Any] = {"role": "assistant", "content": ex.content or None}
    if ex.tool_calls:
        msg["tool_calls"] = ex.tool_calls
    return Reply(ex, msg)


def _from_json(
    writer: RunWriter, status: int, data: Any, req: Any, req_blob: str | None, elapsed: float, sent_ns: int,
    done_ns: int,
) -> Exchange:
    """A non-streamed response in the fields a streamed one fills (no chunks)."""
    raw_blob = (
        writer.blob("response.json", json.dumps(data, ensure_ascii=False))
        if len(json.dumps(data)) > _INLINE_LIMIT_CHARS
        else None
    )
    kept = dict(streamed=False, request=req, request_blob=req_blob, response_blob=raw_blob, elapsed_s=elapsed)
    if status != 200 or not isinstance(data, dict) or not data.get("choices"):
        body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        error = RequestError(kind="http_status" if status != 200 else "not_openai", message=f"HTTP {status}",
                             http_status=status, body=body[:1800])
        return Exchange(**kept, result=StreamResult(sent_ns=sent_ns, done_ns=done_ns, http_status=status,
                                                    error=error))
    choice = data["choices"][0]
    m = choice.get("message") or {}
    field = next((f for f in ("reasoning_content", "reasoning") if m.get(f)), None)
    return Exchange(**kept, result=StreamResult(
        sent_ns=sent_ns,
        done_ns=done_ns,
        http_status=status,
        content=m.get("content") or "",
        reasoning=(m.get(field) or "") if field else "",
        reasoning_field=field,
        tool_calls=[dict(c) for c in (m.get("tool_calls") or [])],
        finish_reason=choice.get("finish_reason"),
        usage=data.get("usage"),
        response_id=data.get("id") if isinstance(data.get("id"), str) else None,
        model=data.get("model") if isinstance(data.get("model"), str) else None,
    ))


def parse_arguments(call: dict[str, Any]) -> dict[str, Any] | None:
    """The call's arguments as a JSON object, or None when they are not one (the model's error)."""
    fn = call.get("function") or {}
    args = fn.get("arguments")
    if isinstance(args, dict):
        return args
    if not isinstance(args, str):
        return None
    try:
        obj = json.loads(args) if args.strip() else {}
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def canonical_calls(calls: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(name, arguments as sorted JSON) per call, to compare calls regardless of formatting."""
    out = []
    for c in calls:
        args = parse_arguments(c)
        text = (
            json.dumps(args, sort_keys=True)
            if args is not None
            else str((c.get("function") or {}).get("arguments"))
        )
        out.append(((c.get("function") or {}).get("name") or "", text))
    return out
