"""Records the quality suites write: raw responses plus the grade given to each."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rigbench.records._base import Frozen, Record
from rigbench.records._stream import StreamResult

__all__ = [
    "Extraction",
    "GradeResult",
    "MMLUProAnswer",
    "MMLUProConfig",
    "PackAnswer",
    "PackConfig",
    "ReasoningForm",
    "TokenSplitMethod",
]

ReasoningForm = Literal["reasoning_content", "reasoning", "think_tags", "none"]


# How the reasoning/answer token split was obtained, most to least exact:
#   no_reasoning: there was no reasoning, so every completion token is an answer token
#   usage_details: the server's usage.completion_tokens_details.reasoning_tokens
#   chunks: one token per generating chunk (chunk count within 1 of completion tokens: an end
#           token may be counted but not streamed), counted by kind; the remainder is answer
#   chars: completion tokens shared out in proportion to characters (an estimate)
#   none: the server reported no completion token count
TokenSplitMethod = Literal["no_reasoning", "usage_details", "chunks", "chars", "none"]


# Which official pattern found the letter (1: "answer is (X)", 2: "Answer: X", 3: last lone
# letter), "failed" when none did (scored wrong, never guessed), "request_failed" when the
# server produced no usable response (scored wrong, reported separately).
Extraction = Literal["pattern1", "pattern2", "pattern3", "failed", "request_failed"]


class MMLUProConfig(Record):
    """What an MMLU-Pro run asked, so a reader can reproduce the sample exactly."""

    kind: Literal["mmlu_pro_config"] = "mmlu_pro_config"
    unit_id: str = "mmlu_pro/config"
    dataset: str  # "hf:TIGER-Lab/MMLU-Pro@<revision>" or "local:<path>"
    data_sha256: str  # hash of the question data the sample came from
    sample_seed: int
    questions_per_subject: int | None  # None: every question
    subjects: list[str]
    shots: int
    max_tokens: int
    protocol: str  # the official scripts this follows, with commit
    question_ids: dict[str, list[int]]  # subject -> the sampled ids, in order


class MMLUProAnswer(Record):
    kind: Literal["mmlu_pro_answer"] = "mmlu_pro_answer"
    unit_id: str  # "mmlu_pro/q<question_id>"
    question_id: int
    subject: str
    n_options: int  # after dropping "N/A" options; chance is 1 / n_options
    gold: str  # the correct letter
    shots: int
    pred: str | None
    extraction: Extraction
    correct: bool
    reasoning_form: ReasoningForm
    reasoning_tokens: int | None
    answer_tokens: int | None
    token_split: TokenSplitMethod
    result: StreamResult


class GradeResult(Frozen):
    grader: str  # "exact" | "regex" | "numeric" | "max_chars" | "json_schema" | "code"
    passed: bool
    detail: str = ""  # what was seen when it failed (or the evidence when it passed)
    confinement: str | None = None  # code grader only: "bwrap", or "unconfined" (--allow-unconfined)


class PackConfig(Record):
    """One pack as it was run: its content hash and the request knobs per effort level."""

    kind: Literal["pack_config"] = "pack_config"
    unit_id: str  # "packs/<pack>/config" or "effort/<pack>/config"
    suite: Literal["packs", "effort"]
    pack: str
    pack_path: str
    pack_sha256: str
    task_ids: list[str]
    repetitions: int
    efforts: list[str]  # [] for a plain pack run
    knobs: dict[str, dict[str, Any]] = Field(default_factory=dict)  # effort -> request fields sent
    engine: str


class PackAnswer(Record):
    kind: Literal["pack_answer"] = "pack_answer"
    unit_id: str  # "packs/<pack>/<task>/r<rep>" or "effort/<pack>/<level>/<task>/r<rep>"
    suite: Literal["packs", "effort"]
    pack: str
    task_id: str
    language: str
    effort: str | None  # None: the server's default
    repetition: int
    grades: list[GradeResult]
    correct: bool  # every grader passed and the request succeeded
    answer_chars: int
    reasoning_form: ReasoningForm
    reasoning_tokens: int | None
    answer_tokens: int | None
    token_split: TokenSplitMethod
    result: StreamResult
