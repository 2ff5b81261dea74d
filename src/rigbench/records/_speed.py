"""Records the speed suite writes (raw observations only)."""

from __future__ import annotations

from typing import Literal

from rigbench.records._base import Record
from rigbench.records._stream import StreamResult

__all__ = ["SpeedBatch", "SpeedRequest", "SpeedSkip"]


class SpeedRequest(Record):
    """One request of one scenario at one concurrency level and repetition."""

    kind: Literal["speed_request"] = "speed_request"
    unit_id: str  # "speed/<scenario>/c<concurrency>/r<repetition>/i<index>"
    scenario: str
    concurrency: int
    repetition: int  # 0-based; warm-up batches are -1, -2, ...
    warmup: bool
    index: int  # request index within its batch
    input_tokens_target: int
    output_tokens_target: int
    input_tokens_measured: int | None  # rendered-prompt tokens, measured before sending
    # Rendered tokens of the prompt without its filler (template, per-request opening, task): no other
    # prompt of the run shares more of it, so a prefix cache may honestly reuse at most this many.
    input_tokens_shared_max: int | None = None
    result: StreamResult


class SpeedBatch(Record):
    """One batch: `concurrency` requests started together; its wall time gives aggregate tok/s."""

    kind: Literal["speed_batch"] = "speed_batch"
    unit_id: str  # "speed/<scenario>/c<concurrency>/r<repetition>"
    scenario: str
    concurrency: int
    repetition: int
    warmup: bool
    started_ns: int
    ended_ns: int
    requests: int
    failed: int


class SpeedSkip(Record):
    """A scenario that was not run, and why (e.g. it does not fit the served context)."""

    kind: Literal["speed_skip"] = "speed_skip"
    unit_id: str
    scenario: str
    reason: str
