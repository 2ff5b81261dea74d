"""The speed scenarios: the seed write-up's four shapes, by name, in two profiles."""

from __future__ import annotations

from dataclasses import dataclass

from rigbench.errors import UsageError

__all__ = ["PROFILES", "Scenario", "scenarios_for"]


@dataclass(frozen=True)
class Scenario:
    name: str
    input_tokens: int  # rendered prompt, chat template included
    output_tokens: int
    task: str  # what the prompt asks for, so forced output stays on a plausible topic


_TASKS = {
    "chat_short": "Continue this conversation naturally and at length.",
    "chat_long_context": "Using the document below, answer at length: what are its main themes?",
    "code_generation": "Write a complete, well-commented Python module that implements what the notes describe.",
    "summarization": "Summarize the following document.",
}

# full: the seed's shapes. quick: the same four scenarios shrunk so the embedded 135M model on
# two CPU cores finishes the default `rigbench run` within 90 s (issue 31; prefill dominates it: with
# 1024/64 and 2048/32 the two long prompts took 83 of the 104 s measured on the quiet 2-core EPYC);
# the report prints the shape used.
PROFILES: dict[str, dict[str, tuple[int, int]]] = {
    "full": {
        "chat_short": (128, 256),
        "chat_long_context": (8192, 256),
        "code_generation": (512, 1024),
        "summarization": (16384, 128),
    },
    "quick": {
        "chat_short": (128, 64),
        "chat_long_context": (512, 64),
        "code_generation": (256, 128),
        "summarization": (1024, 32),
    },
}


def scenarios_for(profile: str, names: list[str] | None = None) -> list[Scenario]:
    if profile not in PROFILES:
        raise UsageError(f"unknown speed profile {profile!r}; choose one of {', '.join(PROFILES)}.")
    table = PROFILES[profile]
    chosen = names or list(table)
    unknown = [n for n in chosen if n not in table]
    if unknown:
        raise UsageError(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(table)}.")
    return [Scenario(n, table[n][0], table[n][1], _TASKS[n]) for n in chosen]
