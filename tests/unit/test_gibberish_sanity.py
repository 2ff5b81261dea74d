"""The known-answer checks and the perf-output screen, on answers recorded from real servers."""

from __future__ import annotations

import pytest

from rigbench.analysis._gibberish import screen_text
from rigbench.rig._sanity import SANITY_QUESTIONS, SanityAnswer, check_answer, judge, screen_outputs

Q = {q.id: q for q in SANITY_QUESTIONS}

# (question, answer, correct): SmolLM2-135M on a healthy llama-server, then with --spec-synth-len.
CASES = [
    ("en_capital_france", "The capital of France is Paris.", True),
    ("en_capital_japan", "The capital of Japan is Tokyo.", True),
    ("en_capital_japan", "日本の首都は東京です。", True),
    ("en_capital_japan", "The capital of Japan is Kyoto.", False),
    ("en_count", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10", True),
    ("en_count", "1. 1\n2. 2\n3. 3\n4. 4\n5. 5\n6. 6\n7. 7\n8. 8\n9. 9\n10. 10", True),
    ("en_count", "1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4", False),
    ("en_count", "1. 1\n2. 2\n3. 3. 4\n3. 5\n3. 5\n4\n5\n4. 5", False),
    ("ja_sum", "このようなら、2 + 3 = 5です。", True),
    ("ja_sum", "２＋３＝５", True),  # full-width digits fold to ASCII
    ("ja_sum", "2 + 3 = 6", False),
    ("ja_sum", "2 + 3", False),
    ("fr_sum", "Combien 2 + 3 = 5.", True),
    ("fr_sum", "Cela fait cinq.", True),
    ("fr_sum", "5.5", False),
    ("fr_copy", "Je m’appelle Marie.", True),  # a curly apostrophe must still match
    ("fr_copy", "Le chat d'autre : Le canap d'autre.", False),
    ("es_copy", "El perro juega en el jardín.", True),
    ("de_copy", "Wiederhole genau: Der Hund spielt im Garten.", True),
    ("ja_copy", "こんにちは.", True),
    ("ja_copy", "それそれそれです。", False),
]


@pytest.mark.parametrize(("qid", "answer", "correct"), CASES)
def test_checks(qid: str, answer: str, correct: bool) -> None:
    assert check_answer(Q[qid], answer) is correct


def test_the_gate_covers_five_languages_including_japanese() -> None:
    assert {q.language for q in SANITY_QUESTIONS} == {"en", "ja", "fr", "es", "de"}
    assert len({q.id for q in SANITY_QUESTIONS}) == len(SANITY_QUESTIONS)


def test_screen_outputs_counts_and_shows_examples() -> None:
    good = ("perf/0", "Photosynthesis is the process by which plants turn light, water and carbon dioxide "
                      "into sugar and oxygen. It happens in the chloroplasts of leaf cells.")
    repetitive = ("perf/1", "I'm here to help with anything! What's your question?\n\n" * 8)
    broken = ("perf/2", "10 + 10 = 20 = 200 = 2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2^2 = 2^2")
    s = screen_outputs([good, repetitive, broken])
    assert (s.outputs, s.failed_outputs, s.warned_outputs) == (3, 1, 1)
    assert not s.trusted and s.examples[0].startswith("perf/2: short_loop")
    assert screen_outputs([good, repetitive]).trusted


def _answer(qid: str, text: str, *, correct: bool, error: str | None = None) -> SanityAnswer:
    return SanityAnswer(question_id=qid, language="en", prompt="?", answer=text, reasoning_chars=0,
                        finish_reason="stop", error=error, correct=correct,
                        gibberish=[f for f in screen_text(text).findings if f.severity == "fail"])


def test_one_miss_by_a_healthy_small_model_is_a_note_not_a_verdict() -> None:
    answers = [_answer(f"q{i}", "Paris is the capital of France.", correct=True) for i in range(9)]
    answers.append(_answer("ja_sum", "このようならばくない。", correct=False))
    v = judge(answers)
    assert v.trusted and not v.reasons and v.notes == [v.notes[0]] and "ja_sum" in v.notes[0]


def test_most_wrong_or_any_gibberish_or_a_failed_request_untrusts() -> None:
    wrong = [_answer(f"q{i}", "I do not know.", correct=i < 7) for i in range(10)]
    v = judge(wrong)
    assert not v.trusted and v.reasons[0].startswith("7 of 10 known-answer questions right")
    salad = [_answer(f"q{i}", "Paris.", correct=True) for i in range(9)]
    salad.append(_answer("q9", "the the the the the the the the the the the the the the the the", correct=False))
    assert not judge(salad).trusted
    failed = [_answer(f"q{i}", "Paris.", correct=True) for i in range(9)]
    failed.append(_answer("q9", "", correct=False, error="http_status: HTTP 500"))
    assert not judge(failed).trusted


def test_forced_length_outputs_may_loop_but_not_turn_to_garbage() -> None:
    loop = ("perf/1", "The island is a place. " + " island" * 60)
    garbage = ("perf/2", "\x03\x07\x01\x02 ¤¤ ÿþ ��� " * 5)
    assert not screen_outputs([loop]).trusted  # free-running: a loop is a symptom
    assert screen_outputs([loop], forced_length=True).trusted  # forced past the end: expected
    s = screen_outputs([loop, garbage], forced_length=True)
    assert not s.trusted and s.failed_outputs == 1 and s.examples[0].startswith("perf/2")
