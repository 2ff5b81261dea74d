import pytest
from app.tax import add_tax


def test_negative_rate_raises():
    with pytest.raises(ValueError):
        add_tax(10.0, -0.1)


def test_add_tax_keeps_the_amount():
    assert add_tax(10.0, 0.10) == pytest.approx(11.0)
