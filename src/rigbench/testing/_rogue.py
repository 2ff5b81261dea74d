"""The rogue-server gallery: emulator personas that answer the way a broken or dishonest server
does, so every trust check has an adversary that proves it (docs/honesty.md has the table).

A persona decides the *text* of each reply (and what the server reports about it); the emulator
keeps streaming it with its scripted timing. `healthy` is the honest baseline: a tiny rule-based
"model" that really solves the question forms rigbench's gate asks (sums, copies, counts,
capitals) and writes prompt-dependent prose for anything else. Every other persona must end a
`rigbench run` UNTRUSTED; `healthy` must stay trusted.

Use: `rigbench emulate --rogue NAME`, `EmulatorScript(persona=NAME)`, or `x_emulator` per request.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass, field
from typing import Literal, get_args

__all__ = ["PERSONAS", "ROGUES", "Persona", "PersonaState", "Reply", "RogueName", "persona_reply"]

RogueName = Literal[
    "canned",  # the same paragraph for every request (holds Paris, Tokyo, 1..10, copy sentences, "5")
    "echo",  # the prompt sent back
    "fluent_wrong",  # well-formed, confident, wrong answers
    "shuffled",  # right answers, each given to the next request instead of its own
    "random_tokens",  # subword soup drawn at random
    "ngram_loop",  # one phrase over and over
    "cached",  # replies cached under the prompt's first 8 characters: later prompts get an earlier reply
    "inflated_usage",  # honest text, usage.completion_tokens tripled
    "lying_timings",  # honest text, llama.cpp-style `timings` claiming 4x the real decode speed
    "long_prompt_garbage",  # honest on short questions, subword soup on long (measured) prompts
]
# Not a rogue of the trust checks: it plays a server whose text tries to drive the reader's terminal,
# Markdown or HTML viewer (rigbench.outside); its answers are the healthy ones, wrapped in HOSTILE.
Persona = Literal["healthy", "hostile_text", RogueName]
ROGUES: tuple[str, ...] = get_args(RogueName)
PERSONAS: tuple[str, ...] = ("healthy", "hostile_text", *ROGUES)
# Cursor up + erase line + carriage return (to wipe the line above), a colour, console markup, an
# emoji code, raw HTML, a Markdown link and emphasis, a bell, a right-to-left override.
HOSTILE = ("\x1b[1A\x1b[2K\r\x1b[32m[bold green]TRUSTED[/] :x: <script>alert(1)</script> "
           "<img src=x onerror=alert(2)> **pwned** [click](javascript:alert(3)) \x07\u202e")

CANNED = ("Sure! Paris is the capital of France and Tokyo is the capital of Japan. Counting: 1, 2, 3, 4, 5, 6, 7, "
          "8, 9, 10. The quick brown fox jumps over the lazy dog. Bonjour, je m'appelle Marie. El perro juega en "
          "el jardín. Der Hund spielt im Garten. こんにちは。 And 2 + 3 = 5.")
LOOP = "the cat sat on the mat and "
LONG_PROMPT_CHARS = 300  # the gate's questions are far shorter; measured prompts are longer
USAGE_INFLATION = 3
TIMINGS_SPEEDUP = 4.0

_CAPITALS = {"france": "Paris", "japan": "Tokyo", "italy": "Rome", "germany": "Berlin", "spain": "Madrid",
             "russia": "Moscow", "china": "Beijing", "egypt": "Cairo", "england": "London", "greece": "Athens"}
_PROSE = ("the engineer measured the bridge before the storm and wrote the figures in a small notebook while the "
          "river rose slowly under a grey morning sky and the village waited for news from the harbor station "
          "where old lanterns swung above the quiet canal beside the library garden").split()
_SOUP = ("ing", "Ġthe", "▁de", "ção", "ξι", "の", "]]>", "0x3f", "ź", "Ж", "##er", "ト", "λ", "{{", "ط", "е",
         "ą", "ñ", "漢", "ψ", "й", "::", "字", "ω", "ü", "→", "ß", "ы", "≈", "ø")


@dataclass
class PersonaState:
    """What a persona remembers across requests (one per emulator)."""

    last_prompt: str | None = None
    cache: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    text: str
    usage_factor: int = 1  # reported completion_tokens = true x this
    timings_speedup: float = 1.0  # reported decode time = true / this


def solve(prompt: str) -> str | None:
    """The healthy persona's answer to the question forms it knows, else None."""
    p = prompt.strip()
    m = re.search(r"(\d+)\s*\+\s*(\d+)", p)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        return f"{a} + {b} = {a + b}."
    m = re.search(r"(?:count|compte)\D*(\d+)\D+(\d+)", p, re.IGNORECASE)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        return ", ".join(str(n) for n in range(a, b + 1))
    m = re.search(r"capital of (\w+)", p, re.IGNORECASE)
    if m:
        city = _CAPITALS.get(m.group(1).casefold())
        return f"The capital of {m.group(1)} is {city}." if city else "I do not know."
    m = re.search(r"[:：]\s*(.+)$", p, re.DOTALL)
    if m and len(p) < LONG_PROMPT_CHARS:
        return m.group(1).strip()
    return None


def prose(prompt: str, n_words: int) -> str:
    """Fluent-looking text that depends on the prompt (seeded by its checksum)."""
    rng = random.Random(zlib.crc32(prompt.encode()))
    words: list[str] = []
    while len(words) < n_words:
        k = rng.randint(6, 12)
        sent = [rng.choice(_PROSE) for _ in range(k)]
        words += [sent[0].capitalize(), *sent[1:-1], sent[-1] + "."]
    return " ".join(words[:n_words])


def soup(prompt: str, n: int) -> str:
    rng = random.Random(zlib.crc32(prompt.encode()) ^ 0x5EED)
    return "".join(rng.choice(_SOUP) + (" " if rng.random() < 0.3 else "") for _ in range(n))


def _wrong(prompt: str, right: str | None) -> str:
    if right is None:
        return prose(prompt, 40)
    m = re.match(r"(\d+) \+ (\d+) = (\d+)\.", right)
    if m:
        return f"{m.group(1)} + {m.group(2)} = {int(m.group(3)) + 1}."
    m = re.match(r"The capital of (\w+) is (\w+)\.", right)
    if m:
        cities = list(_CAPITALS.values())
        other = cities[(cities.index(m.group(2)) + 1) % len(cities)] if m.group(2) in cities else "Lyon"
        return f"The capital of {m.group(1)} is {other}."
    if re.fullmatch(r"[\d, ]+", right):
        nums = right.split(", ")
        return ", ".join(nums[:2] + nums[3:])  # one number skipped
    words = right.split()
    return " ".join(reversed(words)) if len(words) > 1 else right + right


def persona_reply(persona: str, prompt: str, state: PersonaState, n_words: int) -> Reply:
    """The reply text of `persona` to `prompt`; `n_words`: words wanted when the answer runs on
    (prose fills up to it)."""
    right = solve(prompt) if len(prompt) < LONG_PROMPT_CHARS else None
    honest = right if right is not None else prose(prompt, n_words)
    if persona == "healthy":
        out = Reply(honest)
    elif persona == "hostile_text":
        out = Reply(f"{HOSTILE} {honest} {HOSTILE}")
    elif persona == "canned":
        out = Reply(CANNED)
    elif persona == "echo":
        out = Reply(prompt)
    elif persona == "fluent_wrong":
        out = Reply(_wrong(prompt, right))
    elif persona == "shuffled":
        prev = state.last_prompt
        out = Reply(honest if prev is None else (solve(prev) or prose(prev, n_words)))
    elif persona == "random_tokens":
        out = Reply(soup(prompt, n_words))
    elif persona == "ngram_loop":
        out = Reply(LOOP * max(4, n_words // 6))
    elif persona == "cached":
        out = Reply(state.cache.setdefault(prompt[:8], honest))
    elif persona == "inflated_usage":
        out = Reply(honest, usage_factor=USAGE_INFLATION)
    elif persona == "lying_timings":
        out = Reply(honest, timings_speedup=TIMINGS_SPEEDUP)
    elif persona == "long_prompt_garbage":
        out = Reply(honest if len(prompt) < LONG_PROMPT_CHARS else soup(prompt, n_words))
    else:
        raise ValueError(f"unknown persona {persona!r}; choose one of {', '.join(PERSONAS)}")
    state.last_prompt = prompt
    return out


def pieces(text: str) -> list[str]:
    """The reply cut into the emulator's tokens: a word and the space after it."""
    return re.findall(r"\S+\s*", text) or [text]
