"""The emulator's prefix cache: what a real one reports, without the KV it would keep.

A prompt's cached tokens are the longest prefix it shares with any prompt served before (llama.cpp's
slot cache, vLLM's and SGLang's prefix caching all reuse a shared prefix), less the last token,
which every engine computes again to get the first output's logits.
"""

from __future__ import annotations

__all__ = ["PromptPrefixCache"]


class PromptPrefixCache:
    def __init__(self) -> None:
        self._seen: list[list[str]] = []

    def serve(self, tokens: list[str]) -> int:
        """Tokens of `tokens` found in the cache; then `tokens` is cached too."""
        best = 0
        for old in self._seen:
            n = 0
            for a, b in zip(old, tokens, strict=False):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        self._seen.append(tokens)
        return min(best, max(0, len(tokens) - 1))
