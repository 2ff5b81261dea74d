import pytest
from app.discount import apply_discount


def test_no_code_keeps_amount():
    assert apply_discount(80.0) == 80.0


def test_unknown_code_raises():
    with pytest.raises(ValueError):
        apply_discount(80.0, "NOPE")


def test_save10_takes_ten_percent():
    assert apply_discount(80.0, "SAVE10") == 72.0


def test_codes_are_case_insensitive():
    assert apply_discount(80.0, "half") == 40.0
