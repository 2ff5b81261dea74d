"""The known-answer gate: before any speed number, the rig must answer simple questions right.

"Everything below was measured after the model demonstrably answered questions correctly. Given
how easy it was to produce numbers from a broken model, that is not a formality." (seed 000)

The questions are deliberately easy (the embedded SmolLM2-135M passes them all) and span English,
Japanese, French, Spanish and German. Each is checked by code, never by a model, and each answer
is also screened for gibberish. Greedy decoding (temperature 0, fixed seed) keeps the gate
reproducible. A wrong answer is data (a `SanityAnswer` with `correct=False`), not an exception.

`screen_outputs` applies the same gibberish screen to every perf output of a run.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rigbench.analysis._gibberish import GibberishFinding, screen_text
from rigbench.client import ChatClient

__all__ = [
    "SANITY_QUESTIONS",
    "OutputScreen",
    "SanityAnswer",
    "SanityQuestion",
    "SanityVerdict",
    "run_sanity_gate",
    "screen_outputs",
]

CheckKind = Literal["contains", "number", "count_1_to_10"]


class SanityQuestion(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    language: str  # BCP 47 tag of the question
    prompt: str
    check: CheckKind
    expected: list[str]  # any one of these satisfies the check (after normalization)


SANITY_QUESTIONS: tuple[SanityQuestion, ...] = (
    SanityQuestion(id="en_capital_france", language="en", check="contains", expected=["paris"],
                   prompt="What is the capital of France? Answer in one word."),
    SanityQuestion(id="en_capital_japan", language="en", check="contains", expected=["tokyo", "東京"],
                   prompt="What is the capital of Japan? Answer in one word."),
    SanityQuestion(id="en_count", language="en", check="count_1_to_10", expected=["1..10"],
                   prompt="Count from 1 to 10, separated by commas."),
    SanityQuestion(id="en_copy", language="en", check="contains",
                   expected=["the quick brown fox jumps over the lazy dog"],
                   prompt="Repeat exactly: The quick brown fox jumps over the lazy dog."),
    SanityQuestion(id="ja_sum", language="ja", check="number", expected=["5"],
                   prompt="2 + 3 = ? 数字で答えてください。"),
    SanityQuestion(id="ja_copy", language="ja", check="contains", expected=["こんにちは"],
                   prompt="Repeat exactly: こんにちは"),
    SanityQuestion(id="fr_sum", language="fr", check="number", expected=["5", "cinq"],
                   prompt="Combien font 2 + 3 ?"),
    SanityQuestion(id="fr_copy", language="fr", check="contains", expected=["je m'appelle marie"],
                   prompt="Répète exactement : Bonjour, je m'appelle Marie."),
    SanityQuestion(id="es_copy", language="es", check="contains", expected=["el perro juega en el jardín"],
                   prompt="Repite exactamente: El perro juega en el jardín."),
    SanityQuestion(id="de_copy", language="de", check="contains", expected=["der hund spielt im garten"],
                   prompt="Wiederhole genau: Der Hund spielt im Garten."),
)


class SanityAnswer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    question_id: str
    language: str
    prompt: str
    answer: str  # the content the rig returned (reasoning is kept separately)
    reasoning_chars: int
    finish_reason: str | None
    error: str | None  # a failed request: the client's typed message
    correct: bool  # the check passed on `answer`
    gibberish: list[GibberishFinding] = Field(default_factory=list)  # severity "fail" findings only

    @property
    def passed(self) -> bool:
        return self.error is None and self.correct and not self.gibberish


class SanityVerdict(BaseModel):
    """The gate's result, written to the run as one record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["sanity"] = "sanity"
    unit_id: str = "sanity"
    trusted: bool
    answers: list[SanityAnswer]
    reasons: list[str] = Field(default_factory=list)  # why the rig is untrusted (empty when trusted)
    notes: list[str] = Field(default_factory=list)  # questions missed by a rig that still passed the bar
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int


async def run_sanity_gate(
    client: ChatClient,
    model: str,
    *,
    questions: Iterable[SanityQuestion] = SANITY_QUESTIONS,
    max_tokens: int = 512,
    seed: int = 0,
    extra_body: dict[str, Any] | None = None,
) -> SanityVerdict:
    """Ask every question greedily, one at a time, and check each answer.

    `max_tokens` leaves room for reasoning models that think before answering (seed 003: over a
    thousand tokens for a 21-character answer); a healthy small model stops long before it.
    """
    answers: list[SanityAnswer] = []
    for q in questions:
        body: dict[str, Any] = {
            "model": model,
            "messages": [{"role": "user", "content": q.prompt}],
            "temperature": 0.0,
            "seed": seed,
            "max_tokens": max_tokens,
        }
        if extra_body:
            body.update(extra_body)
        r = await client.stream_chat(body)
        error = f"{r.error.kind}: {r.error.message}" if r.error is not None else None
        text = r.content
        findings = [f for f in screen_text(text).findings if f.severity == "fail"] if error is None else []
        answers.append(SanityAnswer(
            question_id=q.id, language=q.language, prompt=q.prompt, answer=text,
            reasoning_chars=len(r.reasoning), finish_reason=r.finish_reason, error=error,
            correct=error is None and check_answer(q, text), gibberish=findings,
        ))
    return judge(answers, seed=seed, max_tokens=max_tokens)


# A healthy model may miss a question now and then: greedy decoding of a small model can flip with
# batch shape or prompt-cache state (seen with SmolLM2-135M on ja_sum). A broken rig misses most of
# them, or answers in gibberish. So: every request must succeed, no answer may be gibberish, and at
# least this fraction must be right; misses below the bar are shown as notes, not hidden.
MIN_CORRECT_FRACTION = 0.8


def judge(answers: list[SanityAnswer], *, seed: int = 0, max_tokens: int = 512) -> SanityVerdict:
    failed = [a for a in answers if not a.passed]
    broken = [a for a in failed if a.error is not None or a.gibberish]
    correct = sum(1 for a in answers if a.passed)
    enough = bool(answers) and correct >= MIN_CORRECT_FRACTION * len(answers)
    trusted = enough and not broken
    lines = [_reason(a) for a in failed]
    if not enough and answers:
        lines.insert(0, f"{correct} of {len(answers)} known-answer questions right, below the "
                        f"{MIN_CORRECT_FRACTION:.0%} bar")
    return SanityVerdict(trusted=trusted, answers=answers, reasons=lines if not trusted else [],
                         notes=lines if trusted else [], seed=seed, max_tokens=max_tokens)


def _reason(a: SanityAnswer) -> str:
    if a.error is not None:
        return f"{a.question_id}: request failed ({a.error})"
    shown = " ".join(a.answer.split())[:80]
    if not a.correct:
        why = "wrong answer" if a.answer.strip() else "empty answer"
        if not a.answer.strip() and a.reasoning_chars:
            why += f" (only {a.reasoning_chars} chars of reasoning; finish_reason={a.finish_reason})"
        return f"{a.question_id}: {why}: {shown!r}"
    kinds = ", ".join(f.kind for f in a.gibberish)
    return f"{a.question_id}: right answer inside gibberish ({kinds}): {shown!r}"


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("’", "'").replace("‘", "'")
    return " ".join(text.split())


_CHECKS: dict[CheckKind, Callable[[SanityQuestion, str], bool]] = {}


def check_answer(q: SanityQuestion, answer: str) -> bool:
    return _CHECKS[q.check](q, answer)


def _check_contains(q: SanityQuestion, answer: str) -> bool:
    norm = _normalize(answer)
    return any(_normalize(e) in norm for e in q.expected)


def _check_number(q: SanityQuestion, answer: str) -> bool:
    norm = _normalize(answer)  # NFKC folds full-width digits (５ -> 5)
    for e in q.expected:
        if e.isdigit():
            if re.search(rf"(?<![\d.]){re.escape(e)}(?!\d|\.\d|\s*[+\-*/^])", norm):
                return True
        elif re.search(rf"\b{re.escape(e)}\b", norm):
            return True
    return False


def _check_count(q: SanityQuestion, answer: str) -> bool:
    """The integers in the answer, with immediate repeats collapsed ("1. 1\\n2. 2" lists), start
    1, 2, ..., 10."""
    nums = [int(n) for n in re.findall(r"\d+", _normalize(answer))]
    collapsed = [n for i, n in enumerate(nums) if i == 0 or n != nums[i - 1]]
    return collapsed[:10] == list(range(1, 11))


_CHECKS.update({"contains": _check_contains, "number": _check_number, "count_1_to_10": _check_count})


class OutputScreen(BaseModel):
    """The gibberish screen over every perf output of a run (one record, kind="output_screen")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["output_screen"] = "output_screen"
    unit_id: str = "output_screen"
    outputs: int  # outputs screened (failed requests are not outputs)
    failed_outputs: int  # outputs with at least one "fail" finding
    warned_outputs: int  # outputs with only "warn" findings
    examples: list[str] = Field(default_factory=list)  # up to 5 "unit_id: finding" lines
    trusted: bool


# Kinds a healthy small model produces when forced past its natural end (ignore_eos): it loops.
# In forced-length outputs they are warnings; character-level garbage still fails.
FORCED_LENGTH_TOLERATED = frozenset({"short_loop"})


def screen_outputs(outputs: Iterable[tuple[str, str]], *, max_examples: int = 5,
                   forced_length: bool = False) -> OutputScreen:
    """Screen (unit_id, text) pairs. One output that no working model would write untrusts the run.

    `forced_length`: the outputs were forced past the model's end of text (the speed suite's
    ignore_eos/min_tokens), so looping is expected and only warns.
    """
    n = failed = warned = 0
    examples: list[str] = []
    for unit_id, text in outputs:
        n += 1
        s = screen_text(text)
        fails = [f for f in s.findings if f.severity == "fail"
                 and not (forced_length and f.kind in FORCED_LENGTH_TOLERATED)]
        if fails:
            failed += 1
            if len(examples) < max_examples:
                examples.append(f"{unit_id}: {fails[0].kind}: {fails[0].detail}")
        elif s.findings:
            warned += 1
    return OutputScreen(outputs=n, failed_outputs=failed, warned_outputs=warned, examples=examples,
                        trusted=failed == 0)
