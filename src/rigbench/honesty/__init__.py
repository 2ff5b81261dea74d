"""The honesty checks: what stands between a rig and a number rigbench prints as trusted.

The known-answer gate (questions generated per run), the gibberish screen on every measured
output, the prefix-cache check on the measured prompts, the checks on the measured traffic (prompt
dependence, reported token counts, server timings), and the engine-independent preflight rules
(engine-specific ones live in each engine's module and are collected through the `Engine`
protocol). docs/honesty.md defines each check.
"""

from rigbench.honesty._gibberish import GibberishScreen, screen_text
from rigbench.honesty._prefix_cache import (
    PREFIX_CACHE_UNTRUST_SHARE,
    PrefixCacheVerdict,
    judge_prefix_cache,
    load_prefix_cache_use,
    prefix_cache_use,
)
from rigbench.honesty._preflight import PreflightInput, ScenarioLength, parse_command, preflight
from rigbench.honesty._sanity import (
    DEFAULT_MIX,
    SanityQuestion,
    extract_answer,
    generate_questions,
    new_question_seed,
    run_sanity_gate,
    screen_outputs,
)
from rigbench.honesty._traffic import check_traffic, count_text_tokens, requests_from_records

__all__ = [
    "DEFAULT_MIX",
    "PREFIX_CACHE_UNTRUST_SHARE",
    "GibberishScreen",
    "PrefixCacheVerdict",
    "PreflightInput",
    "SanityQuestion",
    "ScenarioLength",
    "check_traffic",
    "count_text_tokens",
    "extract_answer",
    "generate_questions",
    "judge_prefix_cache",
    "load_prefix_cache_use",
    "new_question_seed",
    "parse_command",
    "prefix_cache_use",
    "preflight",
    "requests_from_records",
    "run_sanity_gate",
    "screen_outputs",
    "screen_text",
]
