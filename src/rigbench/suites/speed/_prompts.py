"""Prompts of an exact length in the served model's tokens, measured on the rendered prompt.

Each request gets a unique opening, per run and per request (so no engine can serve it from a prefix
cache, not even on a second run with the same seed), followed by
seeded filler prose; the filler is cut in token space with the server's tokenizer, and the
rendered chat prompt (template included) is re-measured until it hits the target.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ExactPrompt", "PromptBuilder"]

_WORDS = (
    "the river city market morning light engineer bridge quiet storm harbor north winter garden "
    "letter station window mountain signal paper orchard valley machine history island evening "
    "library kitchen forest village teacher journey season silver engine lantern canal festival "
    "harvest workshop museum compass meadow tower voyage thunder carpet planet mirror ocean coffee "
    "builds carries remembers finds watches opens follows explains measures repairs writes crosses "
    "slowly carefully suddenly together quietly again early later always often under across beyond "
    "with through before after while because although and but so then old new small bright long "
    "warm cold green heavy gentle careful curious patient ancient modern simple distant "
).split()


def filler_text(seed: int, n_words: int) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    sentence: list[str] = []
    for _ in range(n_words):
        sentence.append(rng.choice(_WORDS))
        if len(sentence) >= rng.randint(8, 16):
            s = " ".join(sentence)
            out.append(s[0].upper() + s[1:] + ".")
            sentence = []
    if sentence:
        s = " ".join(sentence)
        out.append(s[0].upper() + s[1:] + ".")
    return " ".join(out)


@dataclass(frozen=True)
class ExactPrompt:
    messages: list[dict[str, Any]]
    target_tokens: int
    measured_tokens: int | None  # None when the engine cannot count rendered prompts
    # The rendered prompt without its filler (template, opening, task). Prompts of a run differ from
    # the opening's per-request tag on, so no two share more than this: the most a prefix cache may
    # honestly reuse (None when the engine cannot count rendered prompts).
    shared_max_tokens: int | None = None
    body: str = ""  # the filler after the opening (reused by `PromptBuilder.rebuild`)


Tokenize = Callable[[str], Awaitable[list[int] | None]]
Detokenize = Callable[[list[int]], Awaitable[str | None]]
CountChat = Callable[[list[dict[str, Any]]], Awaitable[int | None]]


class PromptBuilder:
    def __init__(self, tokenize: Tokenize, detokenize: Detokenize, count_chat: CountChat) -> None:
        self._tokenize = tokenize
        self._detokenize = detokenize
        self._count_chat = count_chat
        self._overhead: int | None = None

    @staticmethod
    def _head(task: str, seed: int, nonce: str) -> str:
        return f"[request {nonce}-{seed:08x}] {task}\n\n"

    async def filler_tokens(self, seed: int, n_words: int) -> list[int]:
        """A stretch of seeded filler in the served model's tokens ([] when the engine cannot tokenize)."""
        return await self._tokenize(filler_text(seed, n_words)) or []

    async def variant(self, target_tokens: int, base_tokens: int, task: str, seed: int, nonce: str,
                      filler: list[int], offset: int) -> ExactPrompt:
        """A prompt of exactly `target_tokens` with its own opening and its own stretch of `filler`
        (from `offset`): about two calls instead of a fresh build, for windows of thousands of requests.
        `base_tokens`: a rendered opening's count from an earlier `build` (openings differ by a token or
        two; the count is re-measured). Falls back to `build` when the stretch cannot hit the target."""
        head = self._head(task, seed, nonce)
        take = max(0, target_tokens - base_tokens)
        if offset + take > len(filler):
            offset = 0
        for _ in range(4):
            if offset + take > len(filler):
                break
            text = (await self._detokenize(filler[offset:offset + take])) or "" if take > 0 else ""
            messages = [{"role": "user", "content": head + text}]
            measured = await self._count_chat(messages)
            if measured is None:
                break
            if measured == target_tokens:
                return ExactPrompt(messages, target_tokens, measured, base_tokens, text)
            take = max(0, take + (target_tokens - measured))
        return await self.build(task, target_tokens, seed, nonce)

    async def build(self, task: str, target_tokens: int, seed: int, nonce: str) -> ExactPrompt:
        head = self._head(task, seed, nonce)

        def msgs(body: str) -> list[dict[str, Any]]:
            return [{"role": "user", "content": head + body}]

        base = await self._count_chat(msgs(""))
        if base is None:
            # No way to count: approximate with ~4 characters per token and say so (measured=None).
            text = filler_text(seed, max(1, target_tokens))[: max(0, (target_tokens - 30) * 4)]
            return ExactPrompt(msgs(text), target_tokens, None, None, text)
        room = max(0, target_tokens - base)
        filler = filler_text(seed, room + 64)
        tokens = await self._tokenize(filler) or []
        take = min(room, len(tokens))
        measured = base
        text = ""
        for _ in range(6):
            text = (await self._detokenize(tokens[:take])) or "" if take > 0 else ""
            measured = await self._count_chat(msgs(text)) or 0
            if measured == target_tokens:
                break
            take = max(0, min(len(tokens), take + (target_tokens - measured)))
        return ExactPrompt(msgs(text), target_tokens, measured, base, text)
