"""The accumulator: one stream's mutable state while it is read, turned into a frozen `StreamResult` at
its end. Every transport (`_transport.py`) fills one per attempt; `ChatClient` adds the request's
schedule and retries and freezes it. The per-event path (`on_events`) appends a few ints per chunk;
everything else (metrics, token accounting) happens later in `rigbench.analysis`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from rigbench.client._sse import COMMENT, Malformed, decode_json
from rigbench.records import ArrivalStamps, RequestError, RetryAttempt, StreamResult

__all__ = ["Accumulator"]

_perf_ns = time.perf_counter_ns


class Accumulator:
    """Mutable state of one stream; turned into a frozen StreamResult at the end."""

    __slots__ = (
        "arrival",
        "chunk_chars",
        "chunk_kernel_ns",
        "chunk_kind",
        "chunk_ns",
        "coalesced",
        "comments",
        "connect_ns",
        "content",
        "done",
        "done_ns",
        "empty",
        "error",
        "finish_reason",
        "first_content_ns",
        "first_event_kernel_ns",
        "first_event_ns",
        "headers_ns",
        "http_status",
        "kernel_ns",
        "model",
        "reasoning",
        "reasoning_field",
        "response_id",
        "retries",
        "retry_after",
        "retry_stopped",
        "scheduled_ns",
        "sent_ns",
        "timings",
        "tools",
        "usage",
    )

    def __init__(self) -> None:
        self.sent_ns = 0
        self.scheduled_ns: int | None = None
        self.connect_ns: int | None = None
        self.first_content_ns: int | None = None
        self.response_id: str | None = None
        self.headers_ns: int | None = None
        self.first_event_ns: int | None = None
        self.done_ns: int | None = None
        self.chunk_ns: list[int] = []
        self.chunk_kernel_ns: list[int] = []
        self.kernel_ns = 0  # the kernel's stamp of the read being handled (0: none)
        self.first_event_kernel_ns: int | None = None
        self.arrival: ArrivalStamps | None = None
        self.chunk_chars: list[int] = []
        self.chunk_kind: list[str] = []
        self.coalesced = 0
        self.empty = 0
        self.comments = 0
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_field: str | None = None
        self.tools: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.timings: dict[str, Any] | None = None
        self.model: str | None = None
        self.http_status: int | None = None
        self.error: RequestError | None = None
        self.done = False
        self.retry_after: str | None = None  # the refusal's Retry-After header
        self.retries: list[RetryAttempt] = []
        self.retry_stopped: str | None = None

    @classmethod
    def replay(cls, result: StreamResult) -> Accumulator:
        """An accumulator that ends as `result` did: what a stand-in transport (a test's canned server)
        returns, so that `ChatClient` adds the schedule and retries to it as to a real stream's."""
        acc = cls()
        acc.sent_ns, acc.connect_ns, acc.headers_ns = result.sent_ns, result.connect_ns, result.headers_ns
        acc.first_event_ns, acc.done_ns, acc.first_content_ns = result.first_event_ns, result.done_ns, result.first_content_ns
        acc.response_id, acc.arrival = result.response_id, result.arrival
        acc.chunk_ns, acc.chunk_chars, acc.chunk_kind = list(result.chunk_ns), list(result.chunk_chars), list(result.chunk_kind)
        acc.chunk_kernel_ns, acc.first_event_kernel_ns = list(result.chunk_kernel_ns), result.first_event_kernel_ns
        acc.coalesced, acc.empty, acc.comments = result.coalesced_events, result.empty_events, result.comment_events
        acc.content = [result.content] if result.content else []
        acc.reasoning = [result.reasoning] if result.reasoning else []
        acc.reasoning_field, acc.finish_reason = result.reasoning_field, result.finish_reason
        acc.tools = dict(enumerate(result.tool_calls))
        acc.usage, acc.timings, acc.model = result.usage, result.timings, result.model
        acc.http_status, acc.error = result.http_status, result.error
        acc.done = result.error is None
        return acc

    @property
    def finished(self) -> bool:
        return self.done or self.error is not None

    def end_check(self) -> None:
        """The body ended: without [DONE] or a finish_reason that is a broken stream."""
        if self.error is None and not self.done and self.finish_reason is None:
            self.error = RequestError(
                kind="disconnect", message="stream ended before [DONE] or a finish_reason"
            )

    def on_events(self, events: list[bytes | object], now: int, kernel: int = 0) -> None:
        self.kernel_ns = kernel
        if self.first_event_ns is None:
            self.first_event_ns = now
            self.first_event_kernel_ns = kernel or None
        first = True
        for ev in events:
            if not first:
                self.coalesced += 1
            first = False
            if ev is COMMENT:
                self.comments += 1
                continue
            if isinstance(ev, Malformed):
                self._malformed("a line of the stream is not a `data:` field, a comment or another SSE field",
                                ev.line, now)
                return
            assert isinstance(ev, bytes)
            if ev == b"[DONE]":
                self.done = True
                self.done_ns = now
                return
            try:
                obj = decode_json(ev)
            except ValueError:
                self._malformed("a data line is not JSON", ev, now)
                return
            if not isinstance(obj, dict):
                self._malformed("a data line is not a JSON object", ev, now)
                return
            self._on_object(obj, now)
            if self.error is not None:
                self.done_ns = now
                return

    def _malformed(self, message: str, line: bytes, now: int) -> None:
        """The stream broke the SSE or JSON framing: the request fails there, with the line as evidence."""
        self.error = RequestError(kind="malformed_sse", message=message, body=line[:2048].decode(errors="replace"))
        self.done_ns = now

    def _on_object(self, obj: dict[str, Any], now: int) -> None:
        if "error" in obj and "choices" not in obj:
            err = obj["error"]
            msg = err.get("message") if isinstance(err, dict) else str(err)
            self.error = RequestError(
                kind="server_error_event", message=str(msg)[:500], body=json.dumps(obj)[:2048]
            )
            return
        if obj.get("usage"):
            self.usage = obj["usage"]
        if obj.get("timings"):
            self.timings = obj["timings"]
        if self.model is None and obj.get("model"):
            self.model = obj["model"]
        if self.response_id is None and obj.get("id"):
            self.response_id = obj["id"]
        choices = obj.get("choices")
        if choices is None:
            if not obj.get("usage"):
                self.error = RequestError(
                    kind="malformed_sse", message="event without `choices`", body=json.dumps(obj)[:2048]
                )
            return
        if not choices:
            return  # usage-only final chunk
        choice = choices[0]
        delta = choice.get("delta") or {}
        n_chars = 0
        kinds = ""
        text = delta.get("content") if delta else choice.get("text")  # chat, or /completions
        if text:
            if self.first_content_ns is None:
                self.first_content_ns = now
            self.content.append(text)
            n_chars += len(text)
            kinds += "c"
        for field in ("reasoning_content", "reasoning"):
            r = delta.get(field)
            if r:
                self.reasoning.append(r)
                self.reasoning_field = field
                n_chars += len(r)
                kinds += "r"
                break
        tcs = delta.get("tool_calls")
        if tcs:
            kinds += "t"
            for tc in tcs:
                self._merge_tool_call(tc)
        if kinds:
            self.chunk_ns.append(now)
            self.chunk_kernel_ns.append(self.kernel_ns)
            self.chunk_chars.append(n_chars)
            self.chunk_kind.append(kinds if len(kinds) == 1 else "m")
        else:
            self.empty += 1
        fr = choice.get("finish_reason")
        if fr:
            self.finish_reason = fr
            # Some servers send usage in a later chunk, then [DONE]; keep reading until [DONE]
            # or the connection closes, which `stream_chat` treats as the end when a
            # finish_reason was seen.

    def _merge_tool_call(self, tc: dict[str, Any]) -> None:
        idx = tc.get("index", len(self.tools))
        cur = self.tools.setdefault(
            idx, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if tc.get("id"):
            cur["id"] = tc["id"]
        if tc.get("type"):
            cur["type"] = tc["type"]
        fn = tc.get("function") or {}
        if fn.get("name"):
            cur["function"]["name"] += fn["name"]
        if fn.get("arguments"):
            cur["function"]["arguments"] += fn["arguments"]

    def _arrival(self) -> tuple[ArrivalStamps | None, list[int]]:
        """The kernel stamps when every chunk has one; else user-space stamps, saying why."""
        arrival, kernel = self.arrival, self.chunk_kernel_ns
        if arrival is None or arrival.source != "kernel":
            return arrival, []
        if 0 in kernel:
            missing = kernel.count(0)
            return ArrivalStamps(source="user", reason=(
                f"{missing} of {len(kernel)} reads came without a kernel timestamp")), []
        return arrival, kernel

    def result(self) -> StreamResult:
        arrival, kernel = self._arrival()
        return StreamResult(
            chunk_kernel_ns=kernel,
            first_event_kernel_ns=self.first_event_kernel_ns if kernel else None,
            arrival=arrival,
            sent_ns=self.sent_ns,
            scheduled_ns=self.scheduled_ns,
            connect_ns=self.connect_ns,
            first_content_ns=self.first_content_ns,
            response_id=self.response_id,
            headers_ns=self.headers_ns,
            first_event_ns=self.first_event_ns,
            done_ns=self.done_ns if self.done_ns is not None else _perf_ns(),
            chunk_ns=self.chunk_ns,
            chunk_chars=self.chunk_chars,
            chunk_kind="".join(self.chunk_kind),
            coalesced_events=self.coalesced,
            empty_events=self.empty,
            comment_events=self.comments,
            content="".join(self.content),
            reasoning="".join(self.reasoning),
            reasoning_field=self.reasoning_field,
            tool_calls=[self.tools[k] for k in sorted(self.tools)],
            finish_reason=self.finish_reason,
            usage=self.usage,
            timings=self.timings,
            model=self.model,
            http_status=self.http_status,
            error=self.error,
            retries=self.retries,
            retry_stopped=self.retry_stopped,
        )
