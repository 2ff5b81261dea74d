"""The reference emulator: a small OpenAI-compatible HTTP/1.1 server whose behaviour is scripted.

Built on a bare `asyncio.Protocol` so that a chunk costs one preformatted bytes join and one
`transport.write` (a few microseconds): the emulator must never be what limits a benchmark.
Each stream is a chain of `loop.call_at` callbacks on an absolute schedule, so the emulator's own
lateness does not accumulate, and every write is stamped into a `RequestTruth`.

Endpoints: POST /v1/chat/completions, POST /v1/completions (stream or not), GET /v1/models,
POST /tokenize (llama.cpp `content` or vLLM `prompt`/`messages`), POST /detokenize (its token ids, as
vLLM's), GET /metrics, GET /health,
GET /emulator/truth (JSON list of RequestTruth), POST /emulator/reset; GET /version only when the script
sets `version` (with the vLLM names on /metrics, rigbench then identifies the emulator as vLLM).

/metrics gives the emulator's requests and tokens under every known engine's metric names, read from
the engines' adapters (`metric_names`), so telemetry reads it whichever engine a test takes it for and
the names cannot drift from the ones rigbench scrapes; with the script's `spec_metrics`, the speculation
counters too (drafts, draft tokens, accepted tokens of the chunks drawn with `spec_depth`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from functools import cache
from typing import Any, cast

from rigbench.testing._prefix_cache import PromptPrefixCache
from rigbench.testing._reply import Reply, frame, prompt_text
from rigbench.testing._rogue import PersonaState
from rigbench.testing._script import EmulatorScript
from rigbench.testing._truth import RequestTruth

__all__ = ["Emulator"]

_perf_ns = time.perf_counter_ns


class _Req:
    __slots__ = ("body", "headers", "method", "path")

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method, self.path, self.headers, self.body = method, path, headers, body


class Emulator:
    """An in-process emulator server. For timing-truth comparisons run it in another process
    (`EmulatorProcess`), so that its writes are not delayed by the client's event loop."""

    def __init__(
        self, script: EmulatorScript | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.script = script or EmulatorScript()
        self.host = host
        self.port = port
        self._server: asyncio.base_events.Server | None = None
        self.truth: list[RequestTruth] = []
        self._n_requests = 0
        self.running = 0
        self.generation_tokens_total = 0
        self.prompt_tokens_total = 0
        self.requests_total = 0
        self.connections_total = 0
        self.dropped_requests = 0  # sent on a connection spent by close_after_stream, never answered
        self.spec_drafts_total = 0  # vLLM's spec_decode counters, exported when the script's spec_metrics is on
        self.spec_draft_tokens_total = 0
        self.spec_accepted_tokens_total = 0
        self._conns: set[_Conn] = set()
        # its tokenizer: each whitespace-separated word is a token, numbered as first seen (/tokenize,
        # /detokenize and the prompt counts in `usage` agree, so a client can size prompts exactly)
        self.vocab: list[str] = []
        self._ids: dict[str, int] = {}
        # the script's `slots`: streams generating now, and those waiting for a slot (arrival order)
        self.generating = 0
        self._waiting: deque[_Stream] = deque()
        self.persona_state = PersonaState()
        self.prefix_cache = PromptPrefixCache()

    @property
    def url(self) -> str:
        """The OpenAI base URL, ending in /v1."""
        return f"http://{self.host}:{self.port}/v1"

    async def start(self) -> Emulator:
        _engine_metric_names()  # read before serving: a first scrape mid-stream must not stall the loop
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Conn(self), self.host, self.port, backlog=4096, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            if hasattr(self._server, "close_clients"):
                self._server.close_clients()
            self._server = None

    async def __aenter__(self) -> Emulator:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    def drop_connections(self) -> None:
        """Close every open client connection (as a restarting server would)."""
        for c in list(self._conns):
            if c.transport is not None:
                c.transport.close()

    def truth_by_id(self) -> dict[str, RequestTruth]:
        return {t.response_id: t for t in self.truth}

    def next_index(self) -> int:
        i = self._n_requests
        self._n_requests += 1
        return i

    def reset(self) -> None:
        self.truth = []

    def token_ids(self, text: str) -> list[int]:
        out = []
        for word in text.split():
            i = self._ids.get(word)
            if i is None:
                i = self._ids[word] = len(self.vocab)
                self.vocab.append(word)
            out.append(i)
        return out

    def text_of(self, ids: list[int]) -> str:
        return " ".join(self.vocab[i] for i in ids)

    def take_slot(self, stream: _Stream) -> bool:
        """A generation slot for `stream` now (True), or a place in the queue (False: it begins when one frees)."""
        cap = self.script.slots
        if cap is None or self.generating < cap:
            self.generating += 1
            return True
        self._waiting.append(stream)
        return False

    def free_slot(self) -> None:
        """A stream ended: the slot goes to the first waiting stream whose client is still there."""
        self.generating -= 1
        while self._waiting:
            nxt = self._waiting.popleft()
            if nxt.recorded or nxt.conn.transport is None:
                continue  # its client went away while it waited
            self.generating += 1
            nxt.begin()
            return

    def metrics_text(self) -> str:
        label = f'{{model_name="{self.script.model}"}}'
        shared = {"requests_running": ("gauge", self.running),
                  "generation_tokens_total": ("counter", self.generation_tokens_total),
                  "prompt_tokens_total": ("counter", self.prompt_tokens_total)}
        if self.script.spec_metrics:  # as a speculating server registers them: only when it speculates
            shared |= {"spec_drafts_total": ("counter", self.spec_drafts_total),
                       "spec_draft_tokens_total": ("counter", self.spec_draft_tokens_total),
                       "spec_accepted_tokens_total": ("counter", self.spec_accepted_tokens_total)}
        lines = ["# TYPE emulator_requests_total counter", f"emulator_requests_total {self.requests_total}"]
        for names in _engine_metric_names():
            for canonical, (kind, value) in shared.items():
                if name := names.get(canonical):
                    lines += [f"# TYPE {name} {kind}", f"{name}{label} {value}"]
        lines += ["# TYPE emulator_connections_total counter", f"emulator_connections_total {self.connections_total}"]
        return "\n".join(lines) + "\n"


@cache
def _engine_metric_names() -> tuple[dict[str, str], ...]:
    """Each known engine's canonical -> metric name table, from its adapter (read once, when the first
    emulator of the process starts)."""
    # lazy: rigbench.rig (~0.2 s more) is for /metrics only; `import rigbench.testing` should not pay for it
    from rigbench.rig.engines import known_engines

    return tuple(dict(e.adapter().metric_names) for e in known_engines())


class _Conn(asyncio.Protocol):
    """One client connection: parses HTTP/1.1 requests (keep-alive, Content-Length bodies)."""

    def __init__(self, emu: Emulator) -> None:
        self.emu = emu
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.busy = False  # a response is in progress
        self.stream: _Stream | None = None
        self.spent = False  # close_after_stream: the next request is dropped unanswered

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.emu.connections_total += 1
        self.emu._conns.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.emu._conns.discard(self)
        if self.stream is not None:
            self.stream.cancel()
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self._try_request()

    def _try_request(self) -> None:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buf[:end].decode("latin-1").split("\r\n")
        try:
            method, target, _ = head[0].split(" ", 2)
        except ValueError:
            self._simple(400, {"error": {"message": "bad request line"}}, close=True)
            return
        headers = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0") or 0)
        if len(self.buf) < end + 4 + n:
            return
        body = self.buf[end + 4 : end + 4 + n]
        self.buf = self.buf[end + 4 + n :]
        if self.spent and self.transport is not None:
            self.emu.dropped_requests += 1
            self.transport.close()
            return
        self.busy = True
        self._dispatch(_Req(method, target.split("?", 1)[0], headers, body), _perf_ns(), target)

    def finished(self, *, close: bool = False) -> None:
        self.stream = None
        self.busy = False
        if close and self.transport is not None:
            self.transport.close()
        elif self.buf:
            self._try_request()

    # -- responses ---------------------------------------------------------------------------

    def _simple(self, status: int, obj: Any, *, close: bool = False, ctype: str = "application/json",
                headers: dict[str, str] | None = None) -> int:
        raw = obj.encode() if isinstance(obj, str) else json.dumps(obj).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Status")
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(raw)}\r\n{extra}"
            f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n"
        ).encode()
        assert self.transport is not None
        now = _perf_ns()
        self.transport.write(head + raw)
        self.finished(close=close)
        return now

    def _dispatch(self, req: _Req, received_ns: int, target: str) -> None:
        emu = self.emu
        p = req.path
        if req.method == "GET" and p in ("/v1/models", "/models"):
            self._simple(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": emu.script.model,
                            "object": "model",
                            "owned_by": "rigbench-emulator",
                            "max_model_len": 32768,
                        }
                    ],
                },
            )
        elif req.method == "GET" and p == "/version" and emu.script.version is not None:
            self._simple(200, {"version": emu.script.version})
        elif req.method == "GET" and p == "/health":
            self._simple(200, {"status": "ok"})
        elif req.method == "GET" and p == "/metrics":
            self._simple(200, emu.metrics_text(), ctype="text/plain; version=0.0.4")
        elif req.method == "GET" and p == "/emulator/truth":
            self._simple(200, [t.model_dump() for t in emu.truth])
        elif req.method == "POST" and p == "/emulator/reset":
            emu.reset()
            self._simple(200, {"ok": True})
        elif req.method == "POST" and p in ("/tokenize", "/v1/tokenize"):
            tokens = emu.token_ids(prompt_text(_json(req.body)))
            self._simple(200, {"tokens": tokens, "count": len(tokens), "max_model_len": 32768})
        elif req.method == "POST" and p in ("/detokenize", "/v1/detokenize"):
            obj = _json(req.body)
            ids = obj.get("tokens") if isinstance(obj, dict) else None
            if not isinstance(ids, list) or not all(isinstance(i, int) and 0 <= i < len(emu.vocab) for i in ids):
                self._simple(400, {"error": {"message": "tokens: a list of token ids this server gave", "code": 400}})
            else:
                self._simple(200, {"prompt": emu.text_of(ids)})
        elif req.method == "POST" and p in (
            "/v1/chat/completions",
            "/chat/completions",
            "/v1/completions",
            "/completions",
        ):
            obj = _json(req.body)
            if not isinstance(obj, dict):
                self._simple(400, {"error": {"message": "body is not a JSON object", "code": 400}})
                return
            _Stream(self, obj, received_ns, chat="chat" in p, path=p).start()
        else:
            self._simple(404, {"error": {"message": f"no route {req.method} {p}", "code": 404}})


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"{}")
    except ValueError:
        return None


class _Stream:
    """One response on its way out: when each byte goes (a chain of call_at callbacks on an absolute
    schedule, never coroutines: cheaper), the faults that interrupt it, the slot it holds and the truth of
    what was written. What it says is its `Reply` (`_reply.py`)."""

    def __init__(self, conn: _Conn, body: dict[str, Any], received_ns: int, *, chat: bool, path: str) -> None:
        self.conn = conn
        emu = conn.emu
        self.emu = emu
        self.reply = reply = Reply(body, emu.script, emu.next_index(), chat=chat, prefix_cache=emu.prefix_cache,
                                   persona_state=emu.persona_state)
        self.s = reply.s
        self.rng = reply.rng
        self.stream = reply.stream
        self.fault = reply.fault
        self.sizes = reply.sizes
        if reply.s.spec_depth > 0:  # each chunk is one draft of spec_depth tokens, all but its first accepted
            emu.spec_drafts_total += len(self.sizes)
            emu.spec_draft_tokens_total += len(self.sizes) * reply.s.spec_depth
            emu.spec_accepted_tokens_total += sum(self.sizes) - len(self.sizes)
        self.counted = False
        self.recorded = False
        self.has_slot = False
        self.loop = asyncio.get_running_loop()
        self.handle: asyncio.TimerHandle | None = None
        self.j = 0  # next chunk index
        self.tok = 0  # tokens sent so far
        self.fault_fired = False
        self.path = path
        self.received_ns = received_ns
        # truth, kept as plain lists until the end
        self.t_headers: int | None = None
        self.t_role: int | None = None
        self.t_chunks: list[int] = []
        self.t_kinds: list[str] = []
        self.comments = 0
        self.usage_sent = False
        self.due = self.loop.time()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        emu = self.emu
        emu.requests_total += 1
        emu.prompt_tokens_total += self.reply.prompt_tokens
        f = self.fault
        if f is not None and f.kind == "http_status":
            self.fault_fired = True
            now = self.conn._simple(
                f.status, {"error": {"message": f.message, "type": "emulated", "code": f.status}}, headers=f.headers
            )
            self._record(end_ns=now)
            return
        self.conn.stream = self
        if emu.take_slot(self):
            self.begin()

    def begin(self) -> None:
        """Generate, now that the stream holds one of the server's slots (at once without a `slots` limit)."""
        emu = self.emu
        self.has_slot = True
        emu.running += 1
        self.counted = True
        if not self.stream:
            total = self.s.ttft.draw_s(self.rng) + sum(
                self.s.itl.draw_s(self.rng) for _ in range(self.reply.n_tokens - 1)
            )
            self.handle = self.loop.call_later(total, self._whole)
            return
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        )
        first = frame(self.reply.role_event()) if self.reply.chat and self.s.role_chunk else b""
        tr = self.conn.transport
        if tr is None:
            self.cancel()
            return
        now = _perf_ns()
        tr.write(head + first)
        self.t_headers = now
        if first:
            self.t_role = now
        self.due = self.loop.time() + self.s.ttft.draw_s(self.rng)
        self._wait()

    def cancel(self) -> None:
        """The client went away before the response ended."""
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        self._record(end_ns=_perf_ns())

    def _wait(self) -> None:
        ka = self.s.keepalive_ms
        now = self.loop.time()
        if ka is not None and self.due - now > ka / 1000.0:
            self.handle = self.loop.call_at(now + ka / 1000.0, self._keepalive)
        else:
            self.handle = self.loop.call_at(self.due, self._emit)

    def _keepalive(self) -> None:
        tr = self.conn.transport
        if tr is None:
            return
        tr.write(frame(b": keep-alive\n\n"))
        self.comments += 1
        self._wait()

    # -- the per-chunk path --------------------------------------------------------------------

    def _emit(self) -> None:
        tr = self.conn.transport
        if tr is None:
            return
        f = self.fault
        if f is not None and not self.fault_fired and self.tok >= f.at_token:
            self.fault_fired = True
            if f.kind == "stall":
                self.due = self.loop.time() + f.stall_ms / 1000.0
                self._wait()
                return
            if f.kind == "disconnect":
                now = _perf_ns()
                self.conn.stream = None
                tr.close()
                self._record(end_ns=now)
                return
            if f.kind == "malformed":
                tr.write(frame(self.reply.pre + b'"delta":{"content":"oops"'))  # cut-off JSON, then on
                tr.write(frame(b"\n\n"))
            elif f.kind == "error_event":
                err = json.dumps({"error": {"message": f.message, "type": "emulated", "code": 500}}).encode()
                now = _perf_ns()
                tr.write(frame(b"data: " + err + b"\n\n") + frame(b"data: [DONE]\n\n") + b"0\r\n\r\n")
                self._record(end_ns=now)
                self.conn.finished()
                return
        k = self.sizes[self.j]
        s = self.s
        kind, payload = self.reply.chunk(self.j, self.tok)
        self.tok += k
        self.j += 1
        last = self.j >= len(self.sizes)
        if last:
            tail, self.usage_sent = self.reply.tail(self.tok, self.t_chunks[0] if self.t_chunks else None,
                                                    self.received_ns)
            payload += tail
        now = _perf_ns()
        tr.write(frame(payload) + (b"0\r\n\r\n" if last else b""))
        self.t_chunks.append(now)
        self.t_kinds.append(kind)
        self.emu.generation_tokens_total += k
        if last:
            self._record(end_ns=now)
            self.conn.spent = s.close_after_stream
            self.conn.finished()
            return
        # The next chunk is due after one inter-token delay per token it carries.
        nk = self.sizes[self.j]
        self.due += sum(s.itl.draw_s(self.rng) for _ in range(nk)) if nk > 1 else s.itl.draw_s(self.rng)
        self._wait()

    def _whole(self) -> None:
        obj = self.reply.whole()
        self.handle = None
        self.tok = self.reply.n_tokens
        self.emu.generation_tokens_total += self.reply.n_tokens
        if self.conn.transport is None:
            return
        now = self.conn._simple(200, obj)
        self.usage_sent = True
        self._record(end_ns=now)

    def _record(self, *, end_ns: int) -> None:
        if self.recorded:
            return
        self.recorded = True
        if self.counted:
            self.emu.running -= 1
        if self.has_slot:
            self.has_slot = False
            self.emu.free_slot()
        fault = self.fault.kind if (self.fault is not None and self.fault_fired) else None
        self.emu.truth.append(
            RequestTruth(
                index=self.reply.index,
                response_id=self.reply.id,
                path=self.path,
                stream=self.stream,
                received_ns=self.received_ns,
                headers_ns=self.t_headers,
                role_ns=self.t_role,
                chunk_ns=self.t_chunks,
                chunk_tokens=self.sizes[: len(self.t_chunks)],
                chunk_kind="".join(self.t_kinds),
                comments=self.comments,
                end_ns=end_ns,
                fault=fault,
                prompt_tokens=self.reply.prompt_tokens,
                output_tokens=self.tok,
                usage_sent=self.usage_sent,
            )
        )
