"""vLLM's KV block accounting: how it cuts its pool into blocks and how many sessions it prints.

Modelled on vLLM 0.32 (`vllm/v1/kv_cache_interface.py` and `v1/core/kv_cache_utils.py`):

- memory is cut into blocks of `block_size` tokens; a full-attention layer needs
  ceil(max_model_len / block) blocks per request;
- a sliding-window layer keeps ceil((window - 1 + in-flight tokens) / block) + 1 blocks, where the
  in-flight tokens are max_num_batched_tokens x the batches in flight (2 with async scheduling,
  vLLM's default, else 1), capped at max_model_len; not just the window;
- layers of one kind (full, or one window size) are split into KV-cache groups of equal size (the
  gcd of the kinds' layer counts); one pool block holds a page for every layer of a group, and a
  request draws its blocks from each group;
- "Maximum concurrency" = pool blocks / blocks per request, and the "KV cache size" it logs is that
  concurrency x max_model_len, so pool / context = sessions exactly (the second seed: 4,819,435
  tokens at 65,536 is 73.54).
"""

from __future__ import annotations

from collections.abc import Mapping
from math import gcd
from typing import ClassVar

from pydantic import Field

from rigbench.analysis import KVBlocks
from rigbench.records import Frozen

__all__ = ["VLLMAccounting", "vllm_accounting"]


class VLLMAccounting(Frozen):
    """vLLM's block bookkeeping (defaults: vLLM 0.32 on a GPU with async scheduling); an
    `analysis.BlockAccounting`."""

    name: ClassVar[str] = "vllm"
    label: ClassVar[str] = "vLLM blocks"

    block_size: int = Field(default=16, ge=1)
    max_num_batched_tokens: int = Field(default=2048, ge=1)
    batches_in_flight: int = Field(default=2, ge=1)  # 2 with async scheduling, else 1 (x pipeline stages)

    def blocks_per_request(self, window: int | None, context: int) -> int:
        if window is None:
            return -(-context // self.block_size)
        tokens = min(window - 1 + self.max_num_batched_tokens * self.batches_in_flight, context)
        return -(-tokens // self.block_size) + 1

    def blocks(self, windows: list[int | None], bytes_per_token_per_layer: float, budget_bytes: int,
               context_tokens: int) -> KVBlocks:
        """(pool blocks, blocks per session) the way vLLM groups layers (the module's docstring)."""
        kinds: dict[int | None, int] = {}
        for w in windows:
            kinds[w] = kinds.get(w, 0) + 1
        group = 0
        for n in kinds.values():
            group = gcd(group, n)
        block_bytes = group * self.block_size * bytes_per_token_per_layer
        per_session = sum(self.blocks_per_request(w, context_tokens) * self.block_size * bytes_per_token_per_layer
                          for w in windows)
        return KVBlocks(block_size=self.block_size, blocks_total=int(budget_bytes // block_bytes),
                        blocks_per_session=sum((n // group) * self.blocks_per_request(w, context_tokens)
                                               for w, n in kinds.items()),
                        bytes_per_session=per_session)


def vllm_accounting(settings: Mapping[str, int]) -> VLLMAccounting:
    """`Engine.kv_accounting`: the settings the user gave (block_size, max_num_batched_tokens,
    batches_in_flight), vLLM's defaults for the rest."""
    return VLLMAccounting(**settings)
