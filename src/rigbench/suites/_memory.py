"""A suite's prompts fit in this machine's memory, or the suite is refused before it builds them.

Adversary: lengths and counts that each pass their own bound (a trace of 2 million lines of 100k tokens,
`--concurrency 50000` on 16k-token prompts) but together would be built into more prompt text than the
machine holds, growing until the kernel kills the run. Each window's (or batch's) prompts are built
before its first send, so their sum is known before building starts: over half the memory available
now, it is refused with the numbers and what to shrink.
"""

from __future__ import annotations

from collections.abc import Sequence

import psutil

from rigbench.errors import UsageError
from rigbench.sizing import PROMPT_BYTES_PER_TOKEN, prompt_bytes

__all__ = ["check_prompt_memory"]

# The share of the memory available now that one window's prompts may take.
_SHARE = 0.5


def check_prompt_memory(what: str, input_tokens: Sequence[int], fix: str) -> None:
    """Refuse building prompts of `input_tokens` when they would take more than half of the memory available.
    `what` names the window or batch, `fix` what to change."""
    need = prompt_bytes(input_tokens)
    available = psutil.virtual_memory().available
    if need <= available * _SHARE:
        return
    raise UsageError(
        f"{what}: its {len(input_tokens):,} prompts hold {sum(input_tokens):,} input tokens, about "
        f"{need / 2**30:,.1f} GiB once built ({PROMPT_BYTES_PER_TOKEN} bytes a token), more than half of the "
        f"{available / 2**30:,.1f} GiB of memory available now. {fix}")
