"""Context and slot sizing, and the rule that a request fits in the served context.

One place each, because four did it before (the CLI, the plan runner, the speed suite and
preflight) and a change to one drifted from the others. Pure arithmetic on token counts: every
layer may import it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CONTEXT_MARGIN_TOKENS", "PROMPT_BYTES_PER_TOKEN", "context_per_slot", "fits_in_context", "prompt_bytes",
           "slots_for"]

# Memory a built prompt holds per input token, until its request is sent: the text (4-6 characters a
# token), its encoded request body (as many bytes again) and the objects around them, with room to spare
# (measured: benchmarks/hostile_inputs.py).
PROMPT_BYTES_PER_TOKEN = 16

# Room beyond the largest scenario: the chat template's own tokens and the tokenizer's drift
# between rigbench's count and the server's.
CONTEXT_MARGIN_TOKENS = 256


def fits_in_context(input_tokens: int, output_tokens: int, context_tokens: int) -> bool:
    """Whether a request of this shape fits in a served context of `context_tokens` per request.

    The prompt and the whole output share the context: a server asked for more either refuses or
    cuts the output short, and a cut output measures another workload.
    """
    return input_tokens + output_tokens <= context_tokens


def context_per_slot(shapes: Iterable[tuple[int, int]], *, floor: int, unknown_need: int) -> int:
    """The context each slot gets when the user gives none: the largest (input, output) shape plus
    the margin, never below `floor` (the engine's sensible minimum). Without shapes (no speed
    suite) the need is `unknown_need`: room for quality and agent prompts."""
    need = max((i + o for i, o in shapes), default=unknown_need)
    return max(floor, need + CONTEXT_MARGIN_TOKENS)


def slots_for(concurrency: Iterable[int]) -> int:
    """Parallel slots a launched server needs: one per request at the highest concurrency level."""
    return max(concurrency, default=1)


def prompt_bytes(input_tokens: Iterable[int]) -> int:
    """About how much memory prompts of these lengths hold once built (an upper estimate)."""
    return sum(input_tokens) * PROMPT_BYTES_PER_TOKEN
