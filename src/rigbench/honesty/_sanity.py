"""The known-answer gate: before any speed number, the rig must answer simple questions right.

"Everything below was measured after the model demonstrably answered questions correctly. Given
how easy it was to produce numbers from a broken model, that is not a formality." (seed 000)

The questions are generated per run from a seed recorded in the run (`question_seed`). The
default gate asks 4 counts to random ends and 8 capitals of a random draw of countries: the kinds
the embedded model answers reliably (`DEFAULT_MIX`); the generator also knows sums and copies in
five languages, which that model misses too often to judge by. No fixed text can pass: a canned
reply names one capital for all countries, and the answer extracted from it must equal the expected
one exactly (definitions in `extract_answer`, and in docs/honesty.md). Each answer is also
screened for gibberish, and the answers are compared with each other: two different questions
answered identically, an answer that is the right answer to a *different* question (replies
shuffled or cached), or answers that are the prompt echoed back, are findings of their own.

Greedy decoding (temperature 0, fixed sampling seed) and a tight token budget per question keep
the gate fast; a reply that spent its whole budget thinking (a reasoning model) is asked again
with the run's full budget. A wrong answer is data (`SanityAnswer.correct=False`), not an
exception.

`screen_outputs` applies the same gibberish screen to every perf output of a run.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import secrets
import time
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import Field

from rigbench.client import ChatClient
from rigbench.honesty._gibberish import screen_text
from rigbench.records import Frozen, OutputScreen, SanityAnswer, SanityVerdict

__all__ = [
    "DEFAULT_MIX",
    "SanityQuestion",
    "extract_answer",
    "generate_questions",
    "new_question_seed",
    "run_sanity_gate",
    "screen_outputs",
]

CheckKind = Literal["add", "copy", "count", "capital"]


class SanityQuestion(Frozen):
    id: str
    language: str  # BCP 47 tag of the question
    prompt: str
    check: CheckKind
    expected: str  # the one right answer, normalised (see `extract_answer`)
    operands: list[str] = Field(default_factory=list)  # numbers the question itself states
    max_tokens: int  # first-try budget: room for the answer and a sentence around it


# -- question generation ----------------------------------------------------------------------------

# Word lists to copy: common words, so a small model can repeat them; drawn at random per question.
_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("apple", "river", "green", "house", "table", "window", "garden", "yellow", "summer", "little",
           "bread", "chair", "happy", "water", "orange", "music", "paper", "silver", "mountain", "winter"),
    "fr": ("pomme", "maison", "jardin", "rouge", "table", "livre", "soleil", "fleur", "petit", "chat",
           "porte", "matin", "ville", "route", "plage", "arbre", "lune", "pain", "verre", "neige"),
    "es": ("casa", "perro", "jardín", "rojo", "libro", "mesa", "sol", "flor", "agua", "gato",
           "puerta", "playa", "luna", "pan", "árbol", "camino", "verde", "noche", "cielo", "nieve"),
    # no umlauts: SmolLM2-135M copies "grün" as "grunn"
    "de": ("haus", "hund", "garten", "rot", "buch", "tisch", "sonne", "blume", "wasser", "katze",
           "apfel", "baum", "mond", "brot", "stadt", "weg", "nacht", "himmel", "schnee", "winter"),
    # everyday words and greetings: SmolLM2-135M garbles three rarer hiragana words in a row
    "ja": ("こんにちは", "ありがとう", "さようなら", "おはよう", "こんばんは", "すみません", "さくら", "ねこ",
           "いぬ", "やま", "にほん", "とうきょう", "ともだち", "せんせい", "がっこう", "おいしい"),
}
# German and Japanese words are asked for in English: SmolLM2-135M follows an English instruction
# where it garbles "Wiederhole genau" and a Japanese one (calibration notes in docs/benchmarks.md).
_COPY_PROMPT = {
    "en": "Repeat exactly: {text}",
    "fr": "Répète exactement : {text}",
    "es": "Repite exactamente: {text}",
    "de": "Repeat exactly: {text}",
    "ja": "Repeat exactly: {text}",
}
_ADD_PROMPT = {
    "en": "What is {a} + {b}?",
    "fr": "Combien font {a} + {b} ?",
    "es": "¿Cuánto es {a} + {b}?",
    "de": "Was ist {a} + {b}?",
    "ja": "{a} + {b} = ? 数字で答えてください。",
}
_COUNT_PROMPT = {
    "en": "Count from {a} to {b}, separated by commas.",
    "fr": "Compte de {a} à {b}, séparés par des virgules.",
}
# Names of capitals: every name here is also a "wrong capital" for the other countries (extraction).
CAPITALS: dict[str, tuple[str, ...]] = {
    "France": ("paris",), "Japan": ("tokyo", "東京"), "Italy": ("rome", "roma"), "Germany": ("berlin",),
    "Spain": ("madrid",), "Russia": ("moscow",), "China": ("beijing", "peking"), "Egypt": ("cairo",),
    "England": ("london",), "Greece": ("athens",),
}
# The countries asked: SmolLM2-135M answered each of these right every time it was asked (414 asks in
# 80 quiet runs, docs/benchmarks.md). Egypt is not asked: "The capital of Egypt is indeed a marvel of
# human ingenuity." in 35 of about 46 asks, every one of the 35 capital misses seen.
ASKED_COUNTRIES: tuple[str, ...] = ("China", "England", "France", "Germany", "Greece", "Italy", "Japan", "Russia",
                                    "Spain")
_CAPITAL_PROMPT = {"en": "What is the capital of {country}? Answer in one word."}

# The default gate: (kind, language) per question. Only kinds the healthy embedded model answers
# reliably: over 80 quiet runs (benchmarks/gate_false_alarm.py, docs/benchmarks.md) counts missed
# 0 of 240 and the asked capitals 0 of 414, while copies missed 91 of 160 (every language), sums
# 32 of 100 (2 + 5 = 8, 4 + 4 = 10), and Egypt's capital 35 of about 46. With them one healthy run
# in 20 failed (issue 25); they are not asked. The bar (`MAX_MISS_FRACTION`) follows from the
# binomial tail at the measured miss rate (below, before `judge`).
DEFAULT_MIX: tuple[tuple[CheckKind, str], ...] = (
    ("count", "en"), ("count", "en"), ("count", "en"), ("count", "en"),
    ("capital", "en"), ("capital", "en"), ("capital", "en"), ("capital", "en"),
    ("capital", "en"), ("capital", "en"), ("capital", "en"), ("capital", "en"),
)
ADD_RANGE = (2, 5)  # each operand: sums without a carry (SmolLM2-135M answers 3 + 9 = 22)
COPY_WORDS = 3
COUNT_END = (5, 9)  # "count from 1 to N": from 35 it writes about digits; N < 10 so "1, ..., 10" overshoots


def new_question_seed() -> int:
    """A fresh seed per run: the questions are unknown until the run asks them."""
    return secrets.randbits(31)


def generate_questions(seed: int, mix: Iterable[tuple[CheckKind, str]] = DEFAULT_MIX) -> list[SanityQuestion]:
    """The run's questions, a pure function of `seed`. Expected answers are pairwise distinct, so
    two identical answers always mean at least one wrong answer."""
    rng = random.Random(seed)
    out: list[SanityQuestion] = []
    seen: set[str] = set()
    countries = rng.sample(ASKED_COUNTRIES, len(ASKED_COUNTRIES))
    for i, (kind, lang) in enumerate(mix):
        for _ in range(100):
            q = _one(kind, lang, i, rng, countries)
            if q.expected not in seen:
                break
        seen.add(q.expected)
        out.append(q)
    return out


def _one(kind: CheckKind, lang: str, i: int, rng: random.Random, countries: list[str]) -> SanityQuestion:
    qid = f"{kind}_{lang}_{i}"
    if kind == "add":
        a, b = rng.randint(*ADD_RANGE), rng.randint(*ADD_RANGE)
        return SanityQuestion(id=qid, language=lang, check="add", prompt=_ADD_PROMPT[lang].format(a=a, b=b),
                              expected=str(a + b), operands=[str(a), str(b)], max_tokens=24)
    if kind == "copy":
        words = rng.sample(_WORDS[lang], 2 if lang == "ja" else COPY_WORDS)
        sep = "、" if lang == "ja" else " "
        text = sep.join(words)
        if lang != "ja":
            text = text[0].upper() + text[1:] + "."
        return SanityQuestion(id=qid, language=lang, check="copy", prompt=_COPY_PROMPT[lang].format(text=text),
                              expected=" ".join(words), max_tokens=32)
    if kind == "count":
        a, b = 1, rng.randint(*COUNT_END)
        return SanityQuestion(id=qid, language=lang, check="count", prompt=_COUNT_PROMPT[lang].format(a=a, b=b),
                              expected=", ".join(str(n) for n in range(a, b + 1)), operands=[str(a), str(b)],
                              max_tokens=4 * (b - a + 1) + 12)
    country = countries.pop()
    return SanityQuestion(id=qid, language=lang, check="capital",
                          prompt=_CAPITAL_PROMPT[lang].format(country=country),
                          expected=CAPITALS[country][0], max_tokens=24)


# -- answer extraction (exact definitions: docs/honesty.md) --------------------------------------------


def normalize(text: str) -> str:
    """NFKC (full-width digits and letters fold to ASCII), case-folded, curly quotes straightened,
    whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("’", "'").replace("‘", "'")
    return " ".join(text.split())


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", normalize(text))


def _numbers(text: str) -> list[str]:
    # "5.5" is one number (not 5); "1,2,3" is three.
    return re.findall(r"\d+(?:\.\d+)?", normalize(text))


def extract_answer(q: SanityQuestion, answer: str) -> str | None:
    """The answer the reply gives to `q`, normalised like `q.expected`, or None when it gives none
    or contradicts itself. The reply is right when this equals `q.expected`.

    - add: the numbers in the reply other than the question's own operands; all must be the same
      number ("It is not 5, it is 6" gives two different numbers: no answer).
    - copy: the expected words as a contiguous run of the reply's words (the words themselves
      when found, else the reply's first words); Japanese compares the words' letters with
      separators removed.
    - count: the integers in the reply (immediate repeats collapsed, so a "1. 1\n2. 2" list reads
      1, 2) must contain 1..N as one run; running on past N is tolerated (SmolLM2 does, to its
      token budget). When every number of the run is below 10, each digit is read as a number, so
      digits written without separators ("12345678") count too.
    - capital: the capitals (of rigbench's table) named in the reply; exactly one may be named.
    """
    if q.check == "add":
        rest = [n for n in _numbers(answer) if n not in q.operands]
        return rest[0] if rest and len(set(rest)) == 1 else None
    if q.check == "copy":
        want = q.expected.split()
        got = _words(answer)
        if q.language == "ja":
            return q.expected if "".join(want) in "".join(got) else (" ".join(got[:len(want)]) or None)
        for i in range(len(got) - len(want) + 1):
            if got[i:i + len(want)] == want:
                return q.expected
        return " ".join(got[:len(want)]) or None
    if q.check == "count":
        span = [int(x) for x in q.expected.split(", ")]
        # ends below 10: each digit is a number, so "12345678" (commas left out, seen live from
        # SmolLM2-135M on question seed 1876959275) counts 1 to 8, as "1, 2, ..., 8" does
        single = max(span) < 10
        ints = [int(n) for n in re.findall(r"\d" if single else r"\d+", normalize(answer))]
        nums = [n for k, n in enumerate(ints) if k == 0 or n != ints[k - 1]]
        for i in range(len(nums) - len(span) + 1):
            if nums[i:i + len(span)] == span:
                return q.expected
        return None
    named = {names[0] for names in CAPITALS.values() for n in names if _names(answer, n)}
    return named.pop() if len(named) == 1 else None


def _names(answer: str, name: str) -> bool:
    norm = normalize(answer)
    if name.isascii():
        return re.search(rf"\b{re.escape(name)}\b", norm) is not None
    return name in norm


def check_answer(q: SanityQuestion, answer: str) -> bool:
    return extract_answer(q, answer) == q.expected


# -- the gate ---------------------------------------------------------------------------------------


GATE_CONCURRENCY = 4


async def run_sanity_gate(
    client: ChatClient,
    model: str,
    *,
    question_seed: int | None = None,
    questions: list[SanityQuestion] | None = None,
    max_tokens: int = 1024,
    seed: int = 0,
    concurrency: int = GATE_CONCURRENCY,
    extra_body: dict[str, Any] | None = None,
    on_answer: Callable[[], None] | None = None,
) -> SanityVerdict:
    """Ask the run's questions greedily, `concurrency` at a time, and check each answer.

    Each question first gets its own tight budget; a reply that ends on the budget with no
    answer content but with reasoning (a thinking model, seed 003: over a thousand tokens for a
    21-character answer) is asked again with `max_tokens`.
    """
    t0 = time.perf_counter()
    if questions is None:
        question_seed = new_question_seed() if question_seed is None else question_seed
        questions = generate_questions(question_seed)
    sem = asyncio.Semaphore(max(1, concurrency))

    async def ask(q: SanityQuestion) -> SanityAnswer:
        async with sem:
            budget = min(q.max_tokens, max_tokens)
            r = await _ask(client, model, q.prompt, budget, seed, extra_body)
            if (r.error is None and not r.content.strip() and r.reasoning and r.finish_reason == "length"
                    and max_tokens > budget):
                budget = max_tokens
                r = await _ask(client, model, q.prompt, budget, seed, extra_body)
        if on_answer is not None:
            on_answer()
        error = f"{r.error.kind}: {r.error.message}" if r.error is not None else None
        text = r.content
        findings = [f for f in screen_text(text).findings if f.severity == "fail"] if error is None else []
        got = extract_answer(q, text) if error is None else None
        return SanityAnswer(
            question_id=q.id, language=q.language, prompt=q.prompt, answer=text,
            reasoning_chars=len(r.reasoning), finish_reason=r.finish_reason, error=error,
            correct=error is None and got == q.expected, gibberish=findings, expected=q.expected,
            extracted=got, max_tokens=budget, retries=r.retries, retry_stopped=r.retry_stopped,
        )

    answers = list(await asyncio.gather(*(ask(q) for q in questions)))
    v = judge(answers, seed=seed, max_tokens=max_tokens, questions=questions)
    return v.model_copy(update={"question_seed": question_seed, "elapsed_s": round(time.perf_counter() - t0, 3)})


async def _ask(client: ChatClient, model: str, prompt: str, max_tokens: int, seed: int,
               extra_body: dict[str, Any] | None) -> Any:
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}],
                            "temperature": 0.0, "seed": seed, "max_tokens": max_tokens}
    if extra_body:
        body.update(extra_body)
    return await client.stream_chat(body)


# What a miss means. A healthy model may still miss now and then (greedy decoding of a small model
# can flip with batch shape or prompt-cache state); a broken rig misses most questions or answers in
# gibberish. So: every request must succeed, no answer may be gibberish (one is tolerated), no
# cross-answer finding, and at most this share of the questions may be missed (2 of the 12).
# The bar from the binomial tail (docs/honesty.md): with the healthy model's per-question miss rate q
# at most 0.0056 (0 misses in 654 asks of these kinds, upper end of the exact 95% interval),
# P(more than 2 of 12 missed) <= 4e-5, below the 1e-3 target; 1 tolerated miss would give 2.1e-3.
# A rogue that gets every count right for free (a canned "1, 2, ..., 10" holds any count from 1) and
# names capitals at chance (1 in 10) passes with P(6 or more of 8 capitals right) = 2e-5.
MAX_MISS_FRACTION = 1 / 6
ECHO_MIN_FRACTION = 0.5  # this share of answers containing their own prompt: the server echoes
SHUFFLED_MIN = 2  # wrong answers that are right answers to other questions


MAX_GARBLED_ANSWERS = 1  # one looping greedy answer is a healthy small model's quirk, two are not


def max_misses(n: int) -> int:
    """Questions a healthy rig may miss out of `n` (2 of the default 12)."""
    return math.floor(n * MAX_MISS_FRACTION + 1e-9)


def judge(answers: list[SanityAnswer], *, seed: int = 0, max_tokens: int = 1024,
          questions: list[SanityQuestion] | None = None) -> SanityVerdict:
    failed = [a for a in answers if not a.passed]
    # A failed request always untrusts. Degenerate text untrusts from the second answer on: a healthy
    # SmolLM2-135M loops on one greedy prompt now and then ("SHOCK: SHOCK: ...", seeds 7 and 20 of the
    # false-alarm benchmark), while a broken rig (random tokens, an n-gram loop) garbles most answers.
    errors = [a for a in failed if a.error is not None]
    garbled = [a for a in failed if a.error is None and a.gibberish]
    broken = errors + (garbled if len(garbled) >= MAX_GARBLED_ANSWERS + 1 else [])
    correct = sum(1 for a in answers if a.passed)
    bar = len(answers) - max_misses(len(answers))
    enough = bool(answers) and correct >= bar
    findings = cross_answer_findings(answers, questions)
    trusted = enough and not broken and not findings
    lines = [_reason(a) for a in failed]
    if len(garbled) > MAX_GARBLED_ANSWERS:
        lines.insert(0, f"{len(garbled)} answers are degenerate text (at most {MAX_GARBLED_ANSWERS} tolerated)")
    if not enough and answers:
        lines.insert(0, f"{correct} of {len(answers)} known-answer questions right, below the "
                        f"{bar}-of-{len(answers)} bar")
    return SanityVerdict(trusted=trusted, answers=answers, reasons=(findings + lines) if not trusted else [],
                         notes=lines if trusted else [], seed=seed, max_tokens=max_tokens, findings=findings)


def cross_answer_findings(answers: list[SanityAnswer], questions: list[SanityQuestion] | None) -> list[str]:
    """What no single answer shows: the same reply to different prompts, right answers given to
    the wrong questions (shuffled or stale cached replies), and the prompt echoed back."""
    out: list[str] = []
    ok = [a for a in answers if a.error is None and a.answer.strip()]
    groups: dict[str, list[str]] = {}
    for a in ok:
        groups.setdefault(normalize(a.answer), []).append(a.question_id)
    for text, ids in groups.items():
        if len(ids) >= 2:
            out.append(f"{len(ids)} different questions ({', '.join(ids[:4])}) got the identical answer "
                       f"{_show(text)}: the reply does not depend on the prompt (canned or cached)")
    if questions:
        by_id = {q.id: q for q in questions}
        moved: list[str] = []
        for a in ok:
            if a.correct or a.question_id not in by_id:
                continue
            for q in questions:
                if q.id != a.question_id and q.check == by_id[a.question_id].check and check_answer(q, a.answer):
                    moved.append(f"{a.question_id} got {q.id}'s answer")
                    break
        if len(moved) >= SHUFFLED_MIN:
            out.append(f"{len(moved)} answers are right answers to other questions ({'; '.join(moved[:3])}): "
                       "replies are shuffled between requests or served from a stale cache")
    echoed = [a.question_id for a in ok if normalize(a.prompt) in normalize(a.answer)]
    if answers and len(echoed) >= ECHO_MIN_FRACTION * len(answers):
        out.append(f"{len(echoed)} of {len(answers)} answers contain their own question verbatim "
                   f"({', '.join(echoed[:4])}): the server echoes the prompt")
    return out


def _show(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return repr(one[:n] + ("…" if len(one) > n else ""))


def _reason(a: SanityAnswer) -> str:
    if a.error is not None:
        return f"{a.question_id}: request failed ({a.error})"
    shown = _show(a.answer, 80)
    if not a.correct:
        why = "wrong answer" if a.answer.strip() else "empty answer"
        if not a.answer.strip() and a.reasoning_chars:
            why += f" (only {a.reasoning_chars} chars of reasoning; finish_reason={a.finish_reason})"
        if a.expected is not None and a.answer.strip():
            got = "no single answer" if a.extracted is None else repr(a.extracted)
            why += f" (expected {a.expected!r}, extracted {got})"
        return f"{a.question_id}: {why}: {shown}"
    kinds = ", ".join(f.kind for f in a.gibberish)
    return f"{a.question_id}: right answer inside gibberish ({kinds}): {shown}"


# -- the perf-output screen ------------------------------------------------------------------------


# Kinds a healthy small model produces when forced past its natural end (ignore_eos): it loops.
# In forced-length outputs they are warnings; character-level garbage still fails.
FORCED_LENGTH_TOLERATED = frozenset({"short_loop"})


def screen_outputs(outputs: Iterable[tuple[str, str]], *, max_examples: int = 5,
                   forced_length: bool = False) -> OutputScreen:
    """Screen (unit_id, text) pairs. One output that no working model would write untrusts the run.

    `forced_length`: the outputs were forced past the model's end of text (the speed suite's
    ignore_eos/min_tokens), so looping is expected and only warns.
    """
    n = failed = warned = 0
    examples: list[str] = []
    for unit_id, text in outputs:
        n += 1
        s = screen_text(text)
        fails = [f for f in s.findings if f.severity == "fail"
                 and not (forced_length and f.kind in FORCED_LENGTH_TOLERATED)]
        if fails:
            failed += 1
            if len(examples) < max_examples:
                examples.append(f"{unit_id}: {fails[0].kind}: {fails[0].detail}")
        elif s.findings:
            warned += 1
    return OutputScreen(outputs=n, failed_outputs=failed, warned_outputs=warned, examples=examples,
                        trusted=failed == 0)
