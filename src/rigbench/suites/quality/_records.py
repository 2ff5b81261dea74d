"""Records the quality suites write: raw responses plus the grade given to each."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigbench.client import StreamResult
from rigbench.suites.quality._reasoning import ReasoningForm, TokenSplitMethod

__all__ = [
    "Extraction",
    "GradeResult",
    "MMLUProAnswer",
    "MMLUProConfig",
    "PackAnswer",
    "PackConfig",
]

# Which official pattern found the letter (1: "answer is (X)", 2: "Answer: X", 3: last lone
# letter), "failed" when none did (scored wrong, never guessed), "request_failed" when the
# server produced no usable response (scored wrong, reported separately).
Extraction = Literal["pattern1", "pattern2", "pattern3", "failed", "request_failed"]


class MMLUProConfig(BaseModel):
    """What an MMLU-Pro run asked, so a reader can reproduce the sample exactly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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


class MMLUProAnswer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

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


class GradeResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    grader: str  # "exact" | "regex" | "numeric" | "max_chars" | "json_schema" | "code"
    passed: bool
    detail: str = ""  # what was seen when it failed (or the evidence when it passed)
    confinement: str | None = None  # code grader only: "bwrap", or "unconfined" (--allow-unconfined)


class PackConfig(BaseModel):
    """One pack as it was run: its content hash and the request knobs per effort level."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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


class PackAnswer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

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
