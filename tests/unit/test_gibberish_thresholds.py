"""The gibberish screen at each of its documented thresholds (docs/honesty.md, "Gibberish screen"): a text
just inside the limit passes that check and a text just past it is named, so a threshold that drifts (moved
by one, widened or narrowed 10x, `<` turned into `<=`) changes what a user is told about a real output.

The texts are built so that only the check under test can fire: healthy prose as filler (no loop, no
repeated n-grams, no symbols) around the one pattern each check looks for."""

from __future__ import annotations

import zlib

import pytest

from rigbench.honesty._gibberish import screen_text

# 196 characters of varied prose: no loop, no repeated 3-gram, one writing system.
PROSE = ("Paris has a long history that dates back to ancient times, when the Romans built roads, baths and "
         "temples; today the city is known for museums, cafes, bridges over the river Seine and quiet parks.")
LATIN = "abcdefghijklmnopqrstuvwxyz"
CYRILLIC = "абвгдежзиклмнопрстуфхцчшщ"


def kinds(text: str) -> set[str]:
    return {f.kind for f in screen_text(text).findings}


def prose(n: int) -> str:
    """The first n characters of healthy prose (n <= 196), ending on a letter."""
    assert n <= len(PROSE)
    out = PROSE[:n]
    if out.endswith(" "):
        out = out[:-1] + "s"
    assert len(out.strip()) == n
    return out


def test_the_prose_filler_is_clean() -> None:  # the control every case below stands on
    assert screen_text(PROSE).findings == []


# -- invalid characters: more than 1% of the text ---------------------------------------------------------

def test_one_replacement_character_in_100_is_tolerated_one_in_99_is_not() -> None:
    assert "invalid_chars" not in kinds(prose(99) + "\ufffd")  # exactly 1%: at the limit, not over it
    assert "invalid_chars" in kinds(prose(98) + "\ufffd")  # 1.01%
    assert "invalid_chars" not in kinds(prose(196) + "\ufffd")  # 0.5%


# -- symbol soup: under 20% letters and digits, judged from 20 visible characters ------------------------

SYMBOLS = "@#$%^&*()_+{}|:<>?~`=[]\\;',./-!"  # 31 different symbols, no loop among them


def test_symbol_soup_is_judged_from_twenty_visible_characters() -> None:
    assert "symbol_soup" not in kinds(SYMBOLS[:19])  # too short to judge
    assert "symbol_soup" in kinds(SYMBOLS[:20])
    assert "symbol_soup" in kinds(SYMBOLS[:31])


def test_symbol_soup_names_under_one_fifth_letters_and_digits() -> None:
    at_limit = "ab9Z" + SYMBOLS[:16]  # 4 of 20 = 20%: at the limit, not under it
    assert "symbol_soup" not in kinds(at_limit)
    assert "symbol_soup" in kinds("ab9" + SYMBOLS[:17])  # 3 of 20 = 15%
    assert "symbol_soup" not in kinds("ab9Zq" + SYMBOLS[:15])  # 25%


# -- script salad: over 0.25 switches per letter, judged from 40 letters ---------------------------------

def runs(lengths: list[int]) -> str:
    """Letters in runs of the given lengths, alternating Latin and Cyrillic, no letter pattern repeated."""
    out: list[str] = []
    i = 0
    for k, n in enumerate(lengths):
        alphabet = LATIN if k % 2 == 0 else CYRILLIC
        for _ in range(n):
            out.append(alphabet[(i * 7) % len(alphabet)])
            i += 1
    return "".join(out)


def test_script_salad_is_judged_from_forty_letters() -> None:
    every_letter = [1] * 40  # 39 switches in 40 letters
    assert "script_salad" in kinds(runs(every_letter))
    assert "script_salad" not in kinds(runs(every_letter[:39]))  # too few letters to judge


def test_script_salad_names_more_than_one_switch_in_four_letters() -> None:
    ten_switches = runs([4] * 7 + [3] * 4)  # 40 letters, 11 runs: 10 switches = 0.25 per letter
    eleven_switches = runs([4] * 4 + [3] * 8)  # 40 letters, 12 runs: 11 switches = 0.275
    assert len(ten_switches) == len(eleven_switches) == 40
    assert "script_salad" not in kinds(ten_switches)
    assert "script_salad" in kinds(eleven_switches)
    assert "script_salad" not in kinds(runs([8] * 5))  # 4 switches: a bilingual text


# -- short loops: a unit of <= 12 characters, >= 6 times back to back, over >= 30% of the text -----------

def test_a_loop_needs_six_repeats() -> None:
    unit = "xq7|"
    assert "short_loop" in kinds(prose(26) + " " + unit * 6)  # 24 of 51 characters looped
    assert "short_loop" not in kinds(prose(26) + " " + unit * 5)


def test_a_loop_unit_is_at_most_twelve_characters() -> None:
    twelve = "zq7|kv8#wj5!"
    thirteen = "zq7|kv8#wj5!y"
    assert "short_loop" in kinds(prose(60) + " " + twelve * 6)
    assert "short_loop" not in kinds(prose(60) + " " + thirteen * 6)


def test_a_loop_over_thirty_percent_of_the_text_is_named() -> None:
    loop = "xq7|z" * 6  # 30 characters
    assert "short_loop" in kinds(prose(69) + " " + loop)  # 30 of 100: at the limit, named
    assert "short_loop" not in kinds(prose(70) + " " + loop)  # 30 of 101
    assert "short_loop" not in kinds(prose(150) + " " + loop)  # under a sixth


# -- block repetition (warn): under 30% distinct n-grams, judged from 30 n-grams -------------------------

def test_block_repetition_is_judged_from_thirty_ngrams() -> None:
    looped = "abcdefgh" * 5  # no spaces: character 6-grams, 8 distinct
    assert "block_repetition" in kinds(looped[:35])  # 30 six-grams, 27% distinct
    assert "block_repetition" not in kinds(looped[:34])  # 29 six-grams: too few to judge


def test_block_repetition_names_under_thirty_percent_distinct() -> None:
    assert "block_repetition" not in kinds(("abcdefghi" * 4)[:35])  # 9 of 30 distinct = 30%: at the limit
    assert "block_repetition" in kinds(("abcdefgh" * 5)[:35])  # 8 of 30
    assert "block_repetition" not in kinds(("abcdefghijkl" * 3)[:35])  # 12 of 30


# -- low compression (warn): a zlib ratio under 0.20, judged from 200 bytes ------------------------------

def test_low_compression_is_judged_from_two_hundred_bytes() -> None:
    text = "ab" * 100
    assert "low_compression" in kinds(text)  # 200 bytes
    assert "low_compression" not in kinds(text[:199])


@pytest.mark.parametrize(("copies", "named"), [(3, False), (5, True)])
def test_low_compression_names_text_zlib_shrinks_below_a_fifth(copies: int, named: bool) -> None:
    text = " ".join([PROSE] * copies)
    ratio = len(zlib.compress(text.encode(), 9)) / len(text.encode())
    assert (ratio < 0.20) is named, ratio  # the documented threshold, computed the documented way
    assert ("low_compression" in kinds(text)) is named
