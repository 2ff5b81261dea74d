"""What one emulated response says, and its bytes: `Reply`, decided when the request arrives.

The reply's script (the emulator's, with the request's `x_emulator` override), its token count, chunk
sizes and fault, the persona's text when the script has one, and the encoding of each chunk, of the
stream's tail (finish reason, usage, llama.cpp-style timings, [DONE]) and of a non-streamed body.
When each byte goes out, the faults that interrupt it and the truth of what was written are the
stream's (`_server._Stream`); the request's draws come from one generator (`rng`), shared with it, in
the order the emulator has always drawn them.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

from rigbench.testing._prefix_cache import PromptPrefixCache
from rigbench.testing._rogue import PersonaState, persona_reply, pieces, prose
from rigbench.testing._script import EmulatorScript, Fault

__all__ = ["Reply", "frame", "prompt_text"]

_perf_ns = time.perf_counter_ns
_WORDS = [w.encode() for w in ("the ", "cat ", "sat ", "on ", "a ", "mat ", "and ", "ran ")]
_TOKENS: dict[int, list[bytes]] = {}


def _token(i: int, width: int) -> bytes:
    """Output token i: a fixed-width word so tests can count tokens from characters."""
    table = _TOKENS.get(width)
    if table is None:
        table = _TOKENS[width] = [(w.strip() + b"." * width)[: width - 1] + b" " for w in _WORDS]
    return table[i % len(table)]


def frame(payload: bytes) -> bytes:
    """One HTTP/1.1 chunked-transfer frame."""
    return b"%x\r\n%b\r\n" % (len(payload), payload)


def prompt_text(obj: Any) -> str:
    """The prompt of a request body (llama.cpp's `content`, `prompt`, or the messages' text), as one string."""
    if not isinstance(obj, dict):
        return ""
    if isinstance(obj.get("content"), str):
        return str(obj["content"])
    if isinstance(obj.get("prompt"), str):
        return str(obj["prompt"])
    parts = []
    for m in obj.get("messages") or []:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(str(x.get("text", "")) for x in c if isinstance(x, dict))
    return " ".join(parts)


class Reply:
    """One response's content: decided from the request body and the script, encoded chunk by chunk."""

    def __init__(self, body: dict[str, Any], script: EmulatorScript, index: int, *, chat: bool,
                 prefix_cache: PromptPrefixCache, persona_state: PersonaState) -> None:
        override = body.get("x_emulator")
        if isinstance(override, dict):
            script = EmulatorScript.model_validate({**script.model_dump(), **override})
        self.s = script
        self.index = index
        self.rng = random.Random(script.seed * 1_000_003 + index)
        self.chat = chat
        self.stream = bool(body.get("stream"))
        opts = body.get("stream_options") or {}
        self.include_usage = bool(opts.get("include_usage")) if isinstance(opts, dict) else False
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        self.n_tokens = (
            min(script.output_tokens, int(cap))
            if isinstance(cap, int) and cap > 0
            else (script.output_tokens)
        )
        prompt_words = prompt_text(body).split()
        self.prompt_tokens = len(prompt_words)
        self.cached_tokens = prefix_cache.serve(prompt_words) if script.prefix_cache else 0
        self.words: list[bytes] | None = None
        self.usage_factor = 1
        self.timings_speedup = 1.0
        self.persona_finish: str | None = None
        if script.persona is not None:
            self._persona_text(body, cap, persona_state)
        self.id = f"{'chatcmpl' if chat else 'cmpl'}-emu{index}"
        self.created = int(time.time())
        self.fault: Fault | None = next((f for f in script.faults if f.applies(index)), None)
        # A chunk is either reasoning or content, never both (as servers send them).
        n_reason = min(script.reasoning_tokens, self.n_tokens)
        self.sizes = script.chunk_sizes(n_reason, self.rng) + script.chunk_sizes(
            self.n_tokens - n_reason, self.rng
        )
        pre = f'data: {{"id":"{self.id}","object":"{"chat.completion.chunk" if chat else "text_completion"}",'
        pre += f'"created":{self.created},"model":{json.dumps(script.model)},"choices":[{{"index":0,'
        self.pre = pre.encode()

    def _persona_text(self, body: dict[str, Any], cap: Any, persona_state: PersonaState) -> None:
        """The persona writes the reply; its words become the tokens."""
        s = self.s
        assert s.persona is not None
        limit = int(cap) if isinstance(cap, int) and cap > 0 else s.output_tokens
        forced = bool(body.get("ignore_eos")) or bool(body.get("min_tokens"))
        prompt = prompt_text(body)
        reply = persona_reply(s.persona, prompt, persona_state, limit)
        toks = pieces(reply.text)
        if forced and len(toks) < limit:  # forced length: the text runs on, as a model past its end does
            toks = pieces(reply.text.rstrip() + " " + prose(prompt + "+", limit))
        self.persona_finish = "length" if len(toks) > limit or forced else "stop"
        toks = toks[:limit]
        self.words = [json.dumps(t, ensure_ascii=False)[1:-1].encode() for t in toks]
        self.n_tokens = len(toks)
        self.usage_factor = reply.usage_factor
        self.timings_speedup = reply.timings_speedup

    # -- the streamed encoding -------------------------------------------------------------------

    def role_event(self) -> bytes:
        """The role-only first event of a chat stream (when the script sends one)."""
        return self.pre + b'"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'

    def chunk(self, j: int, tok: int) -> tuple[str, bytes]:
        """Chunk `j`, whose tokens start at output token `tok`: its kind letter and its data event."""
        k = self.sizes[j]
        s = self.s
        width = s.token_chars
        if self.words is not None:
            text = b"".join(self.words[tok : tok + k])
        else:
            text = b"".join(_token(tok + i, width) for i in range(k))
        if s.tool_call:
            kind = "t"
            args = text.decode()
            if j == 0:
                args = '{"q": "' + args
            tc: dict[str, Any] = {"index": 0, "function": {"arguments": args}}
            if j == 0:
                tc.update(id=f"call_{self.index}", type="function")
                tc["function"] = {"name": "search", "arguments": args}
            delta = b'"delta":' + json.dumps({"tool_calls": [tc]}).encode()
        elif tok < s.reasoning_tokens:
            kind = "r"
            delta = b'"delta":{"' + s.reasoning_field.encode() + b'":"' + text + b'"}'
        elif self.chat:
            kind = "c"
            delta = b'"delta":{"content":"' + text + b'"}'
        else:
            kind = "c"
            delta = b'"text":"' + text + b'"'
        return kind, self.pre + delta + b',"finish_reason":null}]}\n\n'

    def tail(self, sent: int, first_chunk_ns: int | None, received_ns: int) -> tuple[bytes, bool]:
        """The events after the last chunk, once `sent` tokens went out (the first at `first_chunk_ns`):
        the finish reason, usage as the script places it, timings, [DONE]; and whether usage was sent."""
        s = self.s
        usage_sent = False
        fr = "tool_calls" if s.tool_call else ("length" if self.n_tokens < s.output_tokens else "stop")
        fr = s.finish_reason if s.finish_reason is not None else self.persona_finish or fr
        reported = sent * self.usage_factor
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": reported,
            "total_tokens": self.prompt_tokens + reported,
        }
        if s.prefix_cache:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        finish = '"finish_reason":' + json.dumps(fr) + '}]'
        if (s.persona is not None or s.prefix_cache) and first_chunk_ns is not None:
            # llama.cpp-style timings; predicted_ms spans the tokens after the first, as llama.cpp's does
            now = _perf_ns()
            timings = {
                "cache_n": self.cached_tokens,
                "prompt_n": self.prompt_tokens - self.cached_tokens,
                "prompt_ms": (first_chunk_ns - received_ns) / 1e6,
                "predicted_n": reported,
                "predicted_ms": (now - first_chunk_ns) / 1e6 / self.timings_speedup,
            }
            finish += ',"timings":' + json.dumps(timings)
        if s.tool_call:
            close = json.dumps({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]})
        else:
            close = "{}" if self.chat else ""
        body = '"delta":' + close if close else '"text":""'
        out = self.pre + body.encode() + b"," + finish.encode()
        if self.include_usage and s.usage == "last_token_chunk":
            out += b',"usage":' + json.dumps(usage).encode()
            usage_sent = True
        out += b"}\n\n"
        if self.include_usage and s.usage == "final_chunk":
            kind = "chat.completion.chunk" if self.chat else "text_completion"
            out += (
                "data: "
                + json.dumps(
                    {
                        "id": self.id,
                        "object": kind,
                        "created": self.created,
                        "model": s.model,
                        "choices": [],
                        "usage": usage,
                    }
                )
                + "\n\n"
            ).encode()
            usage_sent = True
        return out + b"data: [DONE]\n\n", usage_sent

    # -- the non-streamed body ---------------------------------------------------------------------

    def whole(self) -> dict[str, Any]:
        """The JSON body of the non-streamed answer: every token at once, with usage."""
        s = self.s
        sizes_text = "".join(_token(i, s.token_chars).decode() for i in range(self.n_tokens))
        n_reason = min(s.reasoning_tokens, self.n_tokens)
        reasoning = sizes_text[: n_reason * s.token_chars]
        content = sizes_text[n_reason * s.token_chars :]
        if self.words is not None:
            reasoning, content = "", json.loads(b'"' + b"".join(self.words) + b'"')
        usage = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.n_tokens * self.usage_factor,
            "total_tokens": self.prompt_tokens + self.n_tokens * self.usage_factor,
        }
        fr = "tool_calls" if s.tool_call else ("length" if self.n_tokens < s.output_tokens else "stop")
        fr = s.finish_reason if s.finish_reason is not None else fr
        if self.chat:
            msg: dict[str, Any] = {"role": "assistant", "content": None if s.tool_call else content}
            if reasoning:
                msg[s.reasoning_field] = reasoning
            if s.tool_call:
                msg["tool_calls"] = [
                    {
                        "id": f"call_{self.index}",
                        "type": "function",
                        "function": {"name": "search", "arguments": json.dumps({"q": content})},
                    }
                ]
            choice: dict[str, Any] = {"index": 0, "message": msg, "finish_reason": fr}
        else:
            choice = {"index": 0, "text": content, "finish_reason": fr}
        return {
            "id": self.id,
            "object": "chat.completion" if self.chat else "text_completion",
            "created": self.created,
            "model": s.model,
            "choices": [choice],
            "usage": usage,
        }
