"""The known-answer checks and the perf-output screen, on answers recorded from real servers."""

from __future__ import annotations

import random

import pytest

from rigbench.honesty._gibberish import screen_text
from rigbench.honesty._sanity import (
    ASKED_COUNTRIES,
    CAPITALS,
    DEFAULT_MIX,
    MAX_MISS_FRACTION,
    SanityQuestion,
    check_answer,
    extract_answer,
    generate_questions,
    judge,
    screen_outputs,
)
from rigbench.records import SanityAnswer
from rigbench.testing._rogue import CANNED


def _q(check: str, expected: str, operands: list[str] | None = None, language: str = "en") -> SanityQuestion:
    return SanityQuestion(id=f"{check}_{language}_0", language=language, prompt="?", check=check,  # type: ignore[arg-type]
                          expected=expected, operands=operands or [], max_tokens=24)


ADD = _q("add", "12", ["7", "5"])
COPY = _q("copy", "apple river green")
COPY_JA = _q("copy", "りんご さくら やま", language="ja")
COUNT = _q("count", "14, 15, 16, 17, 18", ["14", "18"])
CAPITAL = _q("capital", "paris")

# (question, reply, extracted): replies seen from SmolLM2-135M, and the adversaries' tricks.
CASES = [
    (ADD, "12", "12"),
    (ADD, "7 + 5 = 12.", "12"),
    (ADD, "７＋５＝１２", "12"),  # full-width digits fold to ASCII
    (_q("add", "5", ["2", "3"]), "It is not 5, it is 6", None),  # contradicted: two different answers
    (_q("add", "5", ["2", "3"]), "2 + 3 = 5", "5"),
    (ADD, "It is not 11, it is 12", None),
    (ADD, "12.5", "12.5"),  # one number, not 12
    (ADD, "7 + 5", None),  # the question restated: nothing but operands
    (ADD, CANNED, None),
    (COPY, "Apple river green.", "apple river green"),
    (COPY, "Sure: \"apple, river, green\"", "apple river green"),
    (COPY, "Apple green river.", "apple green river"),
    (COPY, CANNED, "sure paris is"),
    (COPY_JA, "りんご、さくら、やま", "りんご さくら やま"),
    (COPY_JA, "りんごさくらやま。", "りんご さくら やま"),
    (COPY_JA, "さくら、りんご、やま", "さくら りんご やま"),
    (COUNT, "14, 15, 16, 17, 18", "14, 15, 16, 17, 18"),
    (COUNT, "Counting from 14 to 18: 14, 15, 16, 17, 18.", "14, 15, 16, 17, 18"),
    (COUNT, "14, 15, 16, 17, 18, 19, 20", "14, 15, 16, 17, 18"),  # running on is tolerated
    (COUNT, "14, 15, 17, 18", None),
    (COUNT, "1. 14\n2. 15\n3. 17", None),
    (COUNT, "1415161718", None),  # ends of 10 and more: digits together are one number
    # ends below 10: digits written together count (SmolLM2-135M, question seed 1876959275)
    (_q("count", "1, 2, 3, 4, 5, 6, 7, 8", ["1", "8"]), "12345678901234567890123456789012345678901234",
     "1, 2, 3, 4, 5, 6, 7, 8"),
    (_q("count", "1, 2, 3, 4, 5, 6, 7, 8", ["1", "8"]), "1234567", None),  # stops short
    (_q("count", "1, 2, 3, 4, 5, 6, 7, 8", ["1", "8"]), "1, 2, 3, 5, 6, 7, 8", None),  # skips one
    (_q("count", "1, 2, 3, 4, 5", ["1", "5"]), "12, 13, 14, 15", None),
    (CAPITAL, "The capital of France is Paris.", "paris"),
    (CAPITAL, "PARIS", "paris"),
    (CAPITAL, "Paris, not London.", None),  # two capitals named: no single answer
    (CAPITAL, "Lyon", None),
    (CAPITAL, CANNED, None),
]


@pytest.mark.parametrize(("q", "reply", "extracted"), CASES)
def test_extraction(q: SanityQuestion, reply: str, extracted: str | None) -> None:
    assert extract_answer(q, reply) == extracted
    assert check_answer(q, reply) is (extracted == q.expected)


def test_questions_are_generated_from_the_seed_of_the_reliable_kinds_only() -> None:
    a, b = generate_questions(1), generate_questions(2)
    assert a == generate_questions(1) and a != b  # reproducible from the recorded seed, new per seed
    # issue 25: only counts and the capitals the healthy model always knew; never Egypt, sums or copies
    for seed in (1, 2, 1876959275, 1876959289, 2**32 - 1):
        qs = generate_questions(seed)
        assert sorted({q.check for q in qs}) == ["capital", "count"] and {q.language for q in qs} == {"en"}
        assert not [q for q in qs if "Egypt" in q.prompt]
        assert all(q.prompt.split("capital of ")[1].split("?")[0] in ASKED_COUNTRIES for q in qs if q.check == "capital")
    every = [("copy", lang) for lang in ("en", "fr", "es", "de", "ja")]  # the generator covers Japanese
    assert {q.language for q in generate_questions(1, every)} == {"en", "fr", "es", "de", "ja"}
    assert len(a) == len(DEFAULT_MIX) and len({q.id for q in a}) == len(a)
    for qs in (a, b, generate_questions(3)):
        assert len({q.expected for q in qs}) == len(qs)  # distinct answers: identical replies mean a wrong one
    assert all(q.expected in {names[0] for names in CAPITALS.values()} for q in a if q.check == "capital")


def test_no_fixed_text_passes_the_gate() -> None:
    """The canned paragraph (Paris, Tokyo, 1..10, the old copy sentences, "5") and the prompt echoed
    back both fail, whatever the seed."""
    for seed in range(20):
        qs = generate_questions(seed)
        for reply in (CANNED, None):
            answers = [_answer(q.id, q.prompt if reply is None else reply, correct=check_answer(q, q.prompt if reply
                               is None else reply), prompt=q.prompt) for q in qs]
            v = judge(answers, questions=qs)
            assert not v.trusted, (seed, reply)
            assert v.findings  # named: identical answers, or the prompt echoed


def test_screen_outputs_counts_and_shows_examples() -> None:
    good = ("perf/0", "Photosynthesis is the process by which plants turn light, water and carbon dioxide "
                      "into sugar and oxygen. It happens in the chloroplasts of leaf cells.")
    repetitive = ("perf/1", "I'm here to help with anything! What's your question?\n\n" * 8)
    broken = ("perf/2", "10 + 10 = 20 = 200 = 2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2 = 2^2")
    s = screen_outputs([good, repetitive, broken])
    assert (s.outputs, s.failed_outputs, s.warned_outputs) == (3, 1, 1)
    assert not s.trusted and s.examples[0].startswith("perf/2: short_loop")
    assert screen_outputs([good, repetitive]).trusted


def _answer(qid: str, text: str, *, correct: bool, error: str | None = None, prompt: str = "?") -> SanityAnswer:
    return SanityAnswer(question_id=qid, language="en", prompt=prompt, answer=text, reasoning_chars=0,
                        finish_reason="stop", error=error, correct=correct,
                        gibberish=[f for f in screen_text(text).findings if f.severity == "fail"])


def test_one_miss_by_a_healthy_small_model_is_a_note_not_a_verdict() -> None:
    answers = [_answer(f"q{i}", f"{i} + 2 = {i + 2}.", correct=True) for i in range(11)]
    answers.append(_answer("add_ja_1", "このようならばくない。", correct=False))
    v = judge(answers)
    assert v.trusted and not v.reasons and v.notes == [v.notes[0]] and "add_ja_1" in v.notes[0]


def test_most_wrong_or_two_gibberish_answers_or_a_failed_request_untrusts() -> None:
    wrong = [_answer(f"q{i}", f"I do not know {i}.", correct=i < 7) for i in range(12)]
    v = judge(wrong)
    assert not v.trusted and v.reasons[0].startswith("7 of 12 known-answer questions right, below the 10-of-12 bar")
    nine = [*wrong[:7], *(w.model_copy(update={"correct": True}) for w in wrong[7:9]), *wrong[9:]]
    assert not judge(nine).trusted and judge(nine).reasons[0].startswith("9 of 12")  # the seeds' 7 of 12 was 8 of 12 ok
    ten = [*nine[:9], nine[9].model_copy(update={"correct": True}), *nine[10:]]
    assert judge(ten).trusted and len(judge(ten).notes) == 2  # two misses: shown as notes
    loop = "the the the the the the the the the the the the the the the the"
    one = [_answer(f"q{i}", f"{i}.", correct=True) for i in range(11)]
    one.append(_answer("q11", loop, correct=False))
    v = judge(one)  # a healthy small model loops on one greedy prompt now and then: a note
    assert v.trusted and any("q11" in n for n in v.notes)
    two = [_answer(f"q{i}", f"{i}.", correct=True) for i in range(10)]
    two += [_answer("q10", loop, correct=False), _answer("q11", loop + " the", correct=False)]
    v = judge(two)
    assert not v.trusted and v.reasons[0].startswith("2 answers are degenerate text")
    failed = [_answer(f"q{i}", f"{i}.", correct=True) for i in range(11)]
    failed.append(_answer("q11", "", correct=False, error="http_status: HTTP 500"))
    assert not judge(failed).trusted


def test_two_different_questions_answered_identically_is_a_finding() -> None:
    answers = [_answer(f"q{i}", f"{i}.", correct=True) for i in range(10)]
    answers += [_answer("q10", "Tokyo.", correct=True), _answer("q11", "Tokyo.", correct=False)]
    v = judge(answers)  # 11 of 12 right: above the bar, yet untrusted
    assert not v.trusted and "2 different questions (q10, q11) got the identical answer 'tokyo.'" in v.reasons[0]


def test_right_answers_to_the_wrong_questions_are_a_finding() -> None:
    qs = generate_questions(7)
    caps = [q for q in qs if q.check == "capital"]
    answers = []
    for q in qs:  # each capital question gets the next one's right answer; the rest are right
        other = caps[(caps.index(q) + 1) % len(caps)] if q in caps else q
        text = f"{other.expected}." if q in caps else {"add": f"= {q.expected}", "count": q.expected,
                                                           "copy": q.expected}[q.check]
        answers.append(_answer(q.id, text, correct=check_answer(q, text), prompt=q.prompt))
    v = judge(answers, questions=qs)
    assert not v.trusted and any("right answers to other questions" in r for r in v.reasons)


def test_forced_length_outputs_may_loop_but_not_turn_to_garbage() -> None:
    loop = ("perf/1", "The island is a place. " + " island" * 60)
    garbage = ("perf/2", "\x03\x07\x01\x02 ¤¤ ÿþ ��� " * 5)
    assert not screen_outputs([loop]).trusted  # free-running: a loop is a symptom
    assert screen_outputs([loop], forced_length=True).trusted  # forced past the end: expected
    s = screen_outputs([loop, garbage], forced_length=True)
    assert not s.trusted and s.failed_outputs == 1 and s.examples[0].startswith("perf/2")


def test_a_format_v1_gate_record_still_loads() -> None:
    """Runs before generated questions stored the fixed-question verdict; reports must still read them."""
    from rigbench.records import SanityVerdict

    v1 = {"kind": "sanity", "unit_id": "sanity", "trusted": True, "reasons": [], "notes": [], "temperature": 0.0,
          "seed": 0, "max_tokens": 1024, "answers": [
              {"question_id": "en_capital_france", "language": "en", "prompt": "What is the capital of France?",
               "answer": "Paris.", "reasoning_chars": 0, "finish_reason": "stop", "error": None, "correct": True,
               "gibberish": []}]}
    v = SanityVerdict.model_validate(v1)
    assert v.question_seed is None and v.answers[0].passed and v.answers[0].expected is None


def test_the_bar_meets_the_false_alarm_target_at_the_measured_miss_rate() -> None:
    """docs/honesty.md: 0 misses in 654 asks of the default kinds gives q <= 0.0056 (95% interval); the
    bar must keep P(false alarm) <= 1e-3 there, and a rogue that passes every count for free and
    names capitals at chance must pass with P <= 1e-3."""
    from scipy import stats

    q = float(stats.binomtest(0, 654).proportion_ci(0.95, method="exact").high)
    assert 0.005 < q < 0.006
    k = len(DEFAULT_MIX)
    m = int(k * MAX_MISS_FRACTION + 1e-9)
    assert stats.binom.sf(m, k, q) <= 1e-3
    counts = sum(1 for kind, _ in DEFAULT_MIX if kind == "count")
    assert stats.binom.sf(k - m - counts - 1, k - counts, 1 / len(CAPITALS)) <= 1e-3
    assert stats.binom.sf(m - 1, k, q) > 1e-3  # one miss fewer would not meet the target: the bar is not loose


def _counted(q: SanityQuestion, rng: random.Random) -> str:
    return ", ".join(str(n) for n in range(1, 11)) + f". That is all, friend {rng.randrange(10**6)}."


def test_a_rogue_at_chance_never_passes_while_two_healthy_misses_do() -> None:
    """The adversary: every count answered by a canned 1..10 (always right), every capital named at
    random from the table, each reply made unique so no identical-answer finding helps. Control:
    the right answers with two random questions missed."""
    rng = random.Random(25)
    names = [n[0] for n in CAPITALS.values()]
    for seed in range(300):
        qs = generate_questions(rng.getrandbits(32))
        rogue = []
        for q in qs:
            text = _counted(q, rng) if q.check == "count" else f"It is {rng.choice(names).title()}, {rng.random():.6f}."
            rogue.append(_answer(q.id, text, correct=check_answer(q, text), prompt=q.prompt))
        assert not judge(rogue, questions=qs).trusted, seed
        missed = set(rng.sample(range(len(qs)), 2))
        healthy = []
        for i, q in enumerate(qs):
            text = f"I am not sure, sorry ({i})." if i in missed else \
                (q.expected if q.check == "count" else f"The capital is {q.expected.title()}.")
            healthy.append(_answer(q.id, text, correct=check_answer(q, text), prompt=q.prompt))
        assert judge(healthy, questions=qs).trusted, (seed, judge(healthy, questions=qs).reasons)
