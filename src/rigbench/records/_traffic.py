"""The record of the checks on the measured traffic (prompt dependence, token counts, timings,
prefix-cache hits)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rigbench.records._base import Frozen, Record

__all__ = ["CacheSource", "ScenarioPrefixCache", "TrafficCheck"]

# Where a scenario's cached-token figure came from, all server-reported:
#   timings   llama.cpp's per-request `timings.cache_n` (and `prompt_n`, the tokens it prefilled)
#   usage     the per-request `usage.prompt_tokens_details.cached_tokens` (OpenAI's field; vLLM with
#             --enable-prompt-tokens-details, SGLang, llama.cpp)
#   counters  the server's prefix-cache counters in /metrics, before/after the scenario (vLLM, SGLang)
CacheSource = Literal["timings", "usage", "counters"]


class ScenarioPrefixCache(Frozen):
    """Prompt tokens of one scenario and concurrency level that the server says it served from its
    prefix cache, against the most that rigbench's prompts share by design (template, opening)."""

    scenario: str
    concurrency: int
    source: CacheSource
    requests: int  # measured requests counted (counters: every request of the level, warm-up included)
    prompt_tokens: int  # the prompts' tokens, cached or not
    cached_tokens: int  # of those, served from the prefix cache (server-reported)
    shared_tokens: int  # the most the prompts share by design (sum over requests)
    beyond_tokens: int  # cached tokens beyond that share: prefill the server skipped
    hit_requests: int | None = None  # requests with cached tokens beyond the design share (None: counters)

    @property
    def cached_share(self) -> float:
        """Share of all prompt tokens served from the cache."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def beyond_share(self) -> float:
        """Share of the prompt tokens *not* shared by design that were served from the cache."""
        rest = self.prompt_tokens - self.shared_tokens
        return min(1.0, self.beyond_tokens / rest) if rest > 0 else 0.0


class TrafficCheck(Record):
    """One record (kind="traffic_check") per run: what was compared and what was found."""

    kind: Literal["traffic_check"] = "traffic_check"
    unit_id: str = "traffic_check"
    outputs: int  # measured outputs compared for prompt dependence
    duplicate_outputs: int  # outputs equal to another prompt's output or to a gate answer
    usage_checked: int  # requests whose reported output tokens were recounted
    usage_method: Literal["tokenize", "bytes_bound", "none"]
    usage_inflated: int
    timings_checked: int  # requests carrying llama.cpp-style timings
    timings_inconsistent: int
    # per scenario and concurrency; empty when the server reports no cached tokens at all
    prefix_cache: list[ScenarioPrefixCache] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)  # why the traffic is not trusted (empty: fine)
    warnings: list[str] = Field(default_factory=list)  # shown in the report, the verdict stands
    examples: list[str] = Field(default_factory=list)

    @property
    def trusted(self) -> bool:
        return not self.reasons
