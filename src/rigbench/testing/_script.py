"""What the reference emulator does for one request: its scripted timing, shape and faults.

A script is plain data. The server holds a default script; a request may override any field by
sending an `x_emulator` object in its JSON body (tests use this to drive many behaviours
through one server).
"""

from __future__ import annotations

import math
import random
from typing import Literal

from pydantic import Field

from rigbench.records import Frozen
from rigbench.testing._rogue import Persona

__all__ = ["Delay", "EmulatorScript", "Fault", "FaultKind", "UsageMode"]

FaultKind = Literal[
    "http_status",  # answer `status` with a JSON error body instead of a stream
    "stall",  # pause `stall_ms` before token `at_token` (keep-alive comments still flow)
    "disconnect",  # close the connection before token `at_token`
    "malformed",  # send a data line that is not JSON before token `at_token`
    "error_event",  # send an in-stream `{"error": ...}` event before token `at_token`
]
UsageMode = Literal["final_chunk", "last_token_chunk", "none"]


class Delay(Frozen):
    """A delay distribution in milliseconds: fixed, uniform(mean±jitter), normal, exponential, lognormal."""

    dist: Literal["fixed", "uniform", "normal", "exponential", "lognormal"] = "fixed"
    mean_ms: float = Field(10.0, ge=0.0)
    jitter_ms: float = Field(0.0, ge=0.0)  # half-width (uniform) or standard deviation (normal, lognormal)

    def draw_s(self, rng: random.Random) -> float:
        if self.dist == "fixed" or (self.jitter_ms == 0.0 and self.dist != "exponential"):
            ms = self.mean_ms
        elif self.dist == "uniform":
            ms = rng.uniform(self.mean_ms - self.jitter_ms, self.mean_ms + self.jitter_ms)
        elif self.dist == "normal":
            ms = rng.gauss(self.mean_ms, self.jitter_ms)
        elif self.dist == "exponential":
            ms = rng.expovariate(1.0 / self.mean_ms) if self.mean_ms > 0 else 0.0
        else:  # lognormal with the given mean and standard deviation

            m, s = self.mean_ms, self.jitter_ms
            sigma2 = math.log(1.0 + (s * s) / (m * m)) if m > 0 else 0.0
            mu = math.log(m) - sigma2 / 2 if m > 0 else 0.0
            ms = rng.lognormvariate(mu, math.sqrt(sigma2))
        return max(0.0, ms) / 1000.0


class Fault(Frozen):
    """One scripted fault. It applies to requests whose server-side index `i` has `i % every == offset`
    (and `i < until`, when set: e.g. `until=2` refuses the first two requests, then lets them through)."""

    kind: FaultKind
    every: int = Field(1, ge=1)
    offset: int = Field(0, ge=0)
    at_token: int = Field(0, ge=0)  # stream faults: before this output token (0 = before the first)
    status: int = 500  # http_status
    message: str = "scripted fault"
    stall_ms: float = 0.0  # stall
    until: int | None = Field(None, ge=0)
    headers: dict[str, str] = Field(default_factory=dict)  # http_status: extra response headers (Retry-After)

    def applies(self, request_index: int) -> bool:
        if self.until is not None and request_index >= self.until:
            return False
        return request_index % self.every == self.offset % self.every


class EmulatorScript(Frozen):
    """How the emulator answers. Every output token is one fixed-width word (`token_chars` chars),
    so a chunk's token count is its text length divided by `token_chars`."""

    model: str = "emulated-model"
    ttft: Delay = Delay(mean_ms=50.0)  # request received -> first generating chunk (its first token)
    itl: Delay = Delay(mean_ms=10.0)  # per generated token; a k-token chunk waits for k of these
    output_tokens: int = Field(64, ge=1)  # capped by the request's max_tokens / max_completion_tokens
    tokens_per_chunk: int = Field(1, ge=1)  # fixed chunk size...
    # ...or drawn like speculative decoding: each of `spec_depth` draft tokens is accepted in
    # turn with probability `spec_accept`, and a chunk carries 1 + accepted tokens.
    spec_depth: int = Field(0, ge=0)
    spec_accept: float = Field(0.7, ge=0.0, le=1.0)
    # export vLLM's spec_decode counters (drafts, draft tokens, accepted tokens: the chunks drawn with
    # spec_depth) on /metrics, as a vLLM with a speculative config does; off, they are absent, as on a
    # vLLM without one
    spec_metrics: bool = False
    # answer GET /version with this, as vLLM does: with the vllm: names on /metrics, rigbench then
    # identifies the emulator as vLLM (None: no /version, an engine rigbench cannot name)
    version: str | None = None
    token_chars: int = Field(4, ge=2)
    role_chunk: bool = True  # a role-only first event, as vLLM and llama.cpp send
    reasoning_tokens: int = Field(0, ge=0)  # the first N output tokens go out as reasoning deltas
    reasoning_field: Literal["reasoning_content", "reasoning"] = "reasoning_content"
    tool_call: bool = False  # the answer is one tool call whose arguments stream over the tokens
    usage: UsageMode = "final_chunk"  # honoured only when the request asks for include_usage
    keepalive_ms: float | None = None  # send `: keep-alive` comments while waiting this long or longer
    faults: list[Fault] = Field(default_factory=list)
    seed: int = 0
    # Who writes the text (rigbench.testing._rogue): None sends fixed-width filler words; "healthy"
    # answers questions and writes prompt-dependent prose; a rogue name plays that adversary.
    # With a persona, the final chunk also carries llama.cpp-style `timings`.
    persona: Persona | None = None
    # Report prompt tokens served from a prefix cache, as a caching server does: the longest prefix
    # (in whitespace words) shared with any earlier prompt, in `timings.cache_n` (timings are then
    # sent without a persona too) and `usage.prompt_tokens_details.cached_tokens`.
    prefix_cache: bool = False
    # Close each connection after a streamed response, although it advertised keep-alive, as llama-server
    # does (docs/engines.md): played as the race's worst case, a connection kept open that drops the next
    # request sent on it unanswered, as a client meets it when it reuses the connection before the close
    # reaches it. The request is never served (no truth record).
    close_after_stream: bool = False
    # A server's capacity: at most this many requests generate at once (llama.cpp's -np slots, a batch
    # limit); a request beyond them waits, in arrival order, for a slot to free before its TTFT starts.
    # None: no limit. A server-wide setting: read from the emulator's own script, never from a request's
    # `x_emulator` override.
    slots: int | None = Field(None, ge=1)

    def chunk_sizes(self, n_tokens: int, rng: random.Random) -> list[int]:
        """Tokens per chunk for an answer of `n_tokens` tokens."""
        sizes: list[int] = []
        left = n_tokens
        while left > 0:
            if self.spec_depth > 0:
                k = 1
                while k <= self.spec_depth and rng.random() < self.spec_accept:
                    k += 1
            else:
                k = self.tokens_per_chunk
            k = min(k, left)
            sizes.append(k)
            left -= k
        return sizes
