"""Where a response's reasoning lives, and how many tokens went to reasoning vs answer.

Servers put reasoning in one of three places: a `reasoning_content` delta field (llama.cpp,
vLLM, SGLang with a reasoning parser), a `reasoning` delta field (Ollama, newer vLLM), or
`<think>...</think>` tags inside the content when no parser is configured. The answer that gets
graded is always the content with any think block removed, never the reasoning.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rigbench.client import StreamResult
from rigbench.records import ReasoningForm, TokenSplitMethod

__all__ = [
    "ReasoningForm",
    "ReasoningSplit",
    "TokenSplit",
    "TokenSplitMethod",
    "split_reasoning",
    "split_tokens",
]


_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_THINK_RE = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.DOTALL)


class ReasoningSplit(NamedTuple):
    answer: str  # content with think blocks removed, stripped
    reasoning: str
    form: ReasoningForm


class TokenSplit(NamedTuple):
    reasoning_tokens: int | None
    answer_tokens: int | None
    method: TokenSplitMethod


def split_reasoning(result: StreamResult) -> ReasoningSplit:
    """Separate reasoning from the answer, whichever of the three forms the server used."""
    if result.reasoning:
        form: ReasoningForm = "reasoning" if result.reasoning_field == "reasoning" else "reasoning_content"
        return ReasoningSplit(_strip_think(result.content), result.reasoning, form)
    content = result.content
    # A template may open the think block in the prompt, so the content starts mid-block and
    # carries only the closing tag.
    if _THINK_CLOSE in content and _THINK_OPEN not in content.split(_THINK_CLOSE, 1)[0]:
        head, tail = content.split(_THINK_CLOSE, 1)
        return ReasoningSplit(_strip_think(tail), head.strip(), "think_tags")
    if _THINK_OPEN in content:
        thoughts = "\n".join(m.group(1).strip() for m in _THINK_RE.finditer(content))
        return ReasoningSplit(_strip_think(content), thoughts, "think_tags")
    return ReasoningSplit(content.strip(), "", "none")


def _strip_think(text: str) -> str:
    return _THINK_RE.sub("", text).strip()


def split_tokens(result: StreamResult) -> TokenSplit:
    """Reasoning and answer token counts of one response, with how they were obtained."""
    total = result.completion_tokens
    if total is None:
        return TokenSplit(None, None, "none")
    details = (result.usage or {}).get("completion_tokens_details") or {}
    rt = details.get("reasoning_tokens") if isinstance(details, dict) else None
    split = split_reasoning(result)
    if isinstance(rt, int) and (rt > 0 or not split.reasoning):
        return TokenSplit(rt, total - rt, "usage_details")
    kinds = result.chunk_kind
    if not split.reasoning:
        return TokenSplit(0, total, "no_reasoning")
    if 0 <= total - len(kinds) <= 1 and "m" not in kinds:
        n_reason = _think_chunks(result) if split.form == "think_tags" else kinds.count("r")
        return TokenSplit(n_reason, total - n_reason, "chunks")
    n_chars = len(split.reasoning) + len(split.answer)
    n_reason = round(total * len(split.reasoning) / n_chars) if n_chars else 0
    return TokenSplit(n_reason, total - n_reason, "chars")


def _think_chunks(result: StreamResult) -> int:
    """Chunks whose text lies inside the think block of the content (tags included)."""
    content = result.content
    close = content.find(_THINK_CLOSE)
    end = close + len(_THINK_CLOSE) if close >= 0 else len(content)
    start = content.find(_THINK_OPEN)
    start = 0 if start < 0 or start > end else start
    pos = 0
    n = 0
    for chars, kind in zip(result.chunk_chars, result.chunk_kind, strict=False):
        if kind == "c":
            if pos < end and pos + chars > start:
                n += 1
            pos += chars
    return n
