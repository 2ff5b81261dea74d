"""Which vLLM versions do what rigbench relies on (read from vLLM's source and changelog)."""

from __future__ import annotations

import re

__all__ = ["PROMPT_TOKENS_DETAILS_SINCE", "SPEC_COUNTERS_MEAN_ON_SINCE", "version_at_least"]

# From this version on, the spec_decode counters exist only with a speculative config (V1's metrics);
# before it (V0) rigbench does not rely on their absence.
SPEC_COUNTERS_MEAN_ON_SINCE = (0, 9)
# `--enable-prompt-tokens-details` fills usage.prompt_tokens_details.cached_tokens on the V1 engine from
# 0.9 (vllm-project/vllm#18192); older V1 servers accepted the flag and reported nothing.
PROMPT_TOKENS_DETAILS_SINCE = (0, 9)


def version_at_least(version: str | None, floor: tuple[int, int]) -> bool:
    """Whether a vLLM version string ("0.32.0", "0.9.1.dev3+g...") is at least `floor` (False if unreadable)."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return m is not None and (int(m.group(1)), int(m.group(2))) >= floor
