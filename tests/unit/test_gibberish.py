"""The gibberish screen: each threshold, with a text on either side of it."""

from __future__ import annotations

import pytest

from rigbench.honesty._gibberish import screen_text

# Real outputs of llama-server + SmolLM2-135M: healthy, and with --spec-synth-len (invalid by design).
HEALTHY = (
    "1. Paris has a long and storied history that dates back to ancient civilizations, with the Romans "
    "building the iconic Eiffel Tower in 1889.\n\n2. The city's rich cultural heritage has been shaped by "
    "the likes of Leonardo da Vinci, who designed the iconic Mona Lisa."
)
SYNTH_BROKEN = (
    "1. Paris has a long and storied history that dates back to ancient civilizations, with the Romans "
    "building the Romans building the Romans building the Romans. Paris has been a long-time capital of "
    "Paris.\n\n" + "2.\n\n" * 30
)


def kinds(text: str) -> set[str]:
    return {f.kind for f in screen_text(text).findings}


def test_healthy_prose_passes_clean() -> None:
    s = screen_text(HEALTHY)
    assert not s.failed and s.findings == []


def test_spec_synth_output_fails_with_a_short_loop() -> None:
    s = screen_text(SYNTH_BROKEN)
    assert s.failed
    assert "short_loop" in kinds(SYNTH_BROKEN)


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_output_fails(text: str) -> None:
    s = screen_text(text)
    assert s.failed and [f.kind for f in s.findings] == ["empty"]


def test_replacement_characters_fail() -> None:
    assert "invalid_chars" in kinds("The answer is \ufffd\ufffd\ufffd Paris and more words here")
    assert "invalid_chars" not in kinds("The answer is Paris, naïve café, 東京.")


def test_symbol_soup_fails_but_code_and_tables_pass() -> None:
    assert "symbol_soup" in kinds("@#$%^&*()_+{}|:<>?~`-=[]\\;',./@#$%^&*()")
    code = "def f(xs):\n    return sorted(set(xs), key=lambda x: (x[1], -x[0]))\n"
    table = "| model | tok/s |\n|---|---|\n| glimmer | 4.3 |\n| qwen | 11.7 |\n"
    assert not screen_text(code).failed
    assert not screen_text(table).failed


def test_japanese_prose_is_not_script_salad() -> None:
    ja = "日本の首都は東京です。東京は日本で最も大きな都市であり、政治と経済の中心地です。多くの観光客が毎年訪れます。"
    assert not screen_text(ja).failed


def test_alternating_scripts_are_salad() -> None:
    salad = "aбcдeфgхiйkлmнoпqрsтuвwыyз" * 3
    assert "script_salad" in kinds(salad)


def test_number_loop_fails_but_a_counted_list_passes() -> None:
    assert screen_text("1, 2, 3, " + "4, " * 50).failed
    counted = "\n".join(f"{i}. {i}" for i in range(1, 31))
    assert not screen_text(counted).failed


def test_loop_below_coverage_threshold_passes() -> None:
    # a short run of "ha" inside a long healthy text covers too little of it
    assert "short_loop" not in kinds(HEALTHY + " hahahahahaha " + HEALTHY)


def test_block_repetition_only_warns() -> None:
    text = "I'm here to help with anything! What's your question?\n\n" * 8
    s = screen_text(text)
    assert not s.failed
    assert {"block_repetition", "low_compression"} <= kinds(text)
    assert all(f.severity == "warn" for f in s.findings)


def test_whitespace_runs_are_layout_not_loops() -> None:
    assert not screen_text("Title\n\n\n\n\n\n\n\n\n\n\n\nBody text that says something useful.").failed
