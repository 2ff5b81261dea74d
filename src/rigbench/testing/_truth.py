"""What the emulator really did for one request, stamped when each write was handed to the kernel.

Stamps are `time.perf_counter_ns()`. On Linux that is CLOCK_MONOTONIC, one clock for every process
on the machine, so an emulator running in another process (the meaningful set-up: its writes are
then not delayed by the client's event loop) gives stamps directly comparable with the client's.
"""

from __future__ import annotations

from pydantic import Field

from rigbench.records import Frozen

__all__ = ["RequestTruth"]


class RequestTruth(Frozen):
    index: int  # server-side request counter, from 0
    response_id: str  # the `id` every chunk of the response carries
    path: str
    stream: bool
    received_ns: int  # the request's last byte was read (its body is complete)
    headers_ns: int | None = None  # response headers written
    role_ns: int | None = None  # role-only first event written
    chunk_ns: list[int] = Field(default_factory=list)  # one per generating chunk, at its write
    chunk_tokens: list[int] = Field(default_factory=list)
    chunk_kind: str = ""  # c: content, r: reasoning, t: tool-call delta (as StreamResult.chunk_kind)
    comments: int = 0  # keep-alive comments written
    end_ns: int | None = None  # final write ([DONE], error body, or the close of a disconnect)
    fault: str | None = None  # the FaultKind that fired, if any
    prompt_tokens: int = 0
    output_tokens: int = 0  # tokens actually sent in generating chunks
    usage_sent: bool = False
