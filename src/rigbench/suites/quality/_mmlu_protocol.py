"""The official MMLU-Pro prompt and answer extraction.

Follows TIGER-AI-Lab/MMLU-Pro `evaluate_from_api.py` at commit
f418b116db00b065c2aea046518d8fcf74d39872: one user message holding the instruction, the
subject's validation examples with their chain of thought, then the question ending in
"Answer: Let's think step by step."; `**` removed from the response; three extraction patterns
tried in order. Two deliberate differences (docs/quality.md): no random guess when extraction
fails, and the letter is looked for in the answer content only, never in the reasoning.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rigbench.suites.quality._mmlu_data import MMLUProQuestion

__all__ = ["LETTERS", "PROTOCOL", "ExtractedAnswer", "build_prompt", "extract_answer"]

PROTOCOL = "TIGER-AI-Lab/MMLU-Pro evaluate_from_api.py @ f418b116db00b065c2aea046518d8fcf74d39872"
LETTERS = "ABCDEFGHIJ"

_P1 = re.compile(r"answer is \(?([A-J])\)?")
_P2 = re.compile(r".*[aA]nswer:\s*([A-J])")
_P3 = re.compile(r"\b[A-J]\b(?!.*\b[A-J]\b)", re.DOTALL)


class ExtractedAnswer(NamedTuple):
    letter: str | None
    pattern: int | None  # 1, 2 or 3; None when nothing matched


def _format_example(question: str, options: list[str], cot_content: str = "") -> str:
    if cot_content == "":
        cot_content = "Let's think step by step."
    if cot_content.startswith("A: "):
        cot_content = cot_content[3:]
    text = f"Question: {question}\nOptions: "
    for letter, opt in zip(LETTERS, options, strict=False):
        text += f"{letter}. {opt}\n"
    return text + "Answer: " + cot_content + "\n\n"


def build_prompt(question: MMLUProQuestion, shots: list[MMLUProQuestion]) -> str:
    """The exact text the official API script sends as the single user message."""
    prompt = (
        f"The following are multiple choice questions (with answers) about {question.category}. "
        'Think step by step and then output the answer in the format of "The answer is (X)" at the end.\n\n'
    )
    for ex in shots:
        prompt += _format_example(ex.question, ex.options, ex.cot_content)
    return prompt + _format_example(question.question, question.options)


def extract_answer(response: str) -> ExtractedAnswer:
    """The official patterns, in order, on the response with `**` removed."""
    text = response.replace("**", "")
    m = _P1.search(text)
    if m:
        return ExtractedAnswer(m.group(1), 1)
    m = _P2.search(text)
    if m:
        return ExtractedAnswer(m.group(1), 2)
    m = _P3.search(text)
    if m:
        return ExtractedAnswer(m.group(0), 3)
    return ExtractedAnswer(None, None)
