"""The known-answer gate's record: every answer the rig gave, and the verdict."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rigbench.records._base import Frozen, Record
from rigbench.records._gibberish import GibberishFinding
from rigbench.records._stream import RetryAttempt

__all__ = ["SanityAnswer", "SanityVerdict"]


class SanityAnswer(Frozen):
    question_id: str
    language: str
    prompt: str
    answer: str  # the content the rig returned (reasoning is kept separately)
    reasoning_chars: int
    finish_reason: str | None
    error: str | None  # a failed request: the client's typed message
    correct: bool  # the extracted answer equals the expected one
    gibberish: list[GibberishFinding] = Field(default_factory=list)  # severity "fail" findings only
    expected: str | None = None  # absent in runs before generated questions (2026-11-30)
    extracted: str | None = None
    max_tokens: int | None = None  # the budget of the try that produced `answer`
    # `--retry-on`: refusals before the answer (as StreamResult.retries; format 9, older answers: none)
    retries: list[RetryAttempt] = Field(default_factory=list)
    retry_stopped: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.correct and not self.gibberish


class SanityVerdict(Record):
    """The gate's result, written to the run as one record."""

    kind: Literal["sanity"] = "sanity"
    unit_id: str = "sanity"
    trusted: bool
    answers: list[SanityAnswer]
    reasons: list[str] = Field(default_factory=list)  # why the rig is untrusted (empty when trusted)
    notes: list[str] = Field(default_factory=list)  # questions missed by a rig that still passed the bar
    temperature: float = 0.0
    seed: int = 0  # sampling seed sent with every question
    max_tokens: int  # the retry budget for replies that spent their first budget reasoning
    question_seed: int | None = None  # generated the questions (None: the fixed questions of older runs)
    findings: list[str] = Field(default_factory=list)  # cross-answer findings (identical, shuffled, echo)
    elapsed_s: float | None = None
