import pytest
from app import Cart


def test_add_counts_items():
    cart = Cart()
    cart.add("tea", 3.0, 2)
    cart.add("cake", 4.5)
    assert cart.count() == 3


def test_add_rejects_zero_quantity():
    with pytest.raises(ValueError):
        Cart().add("tea", 3.0, 0)


def test_subtotal_single_item():
    cart = Cart()
    cart.add("cake", 4.5)
    assert cart.subtotal() == 4.5


def test_subtotal_multiplies_quantity():
    cart = Cart()
    cart.add("tea", 3.0, 2)
    cart.add("cake", 4.5)
    assert cart.subtotal() == 10.5


def test_total_adds_tax():
    cart = Cart()
    cart.add("cake", 10.0)
    assert cart.total() == 11.0


def test_empty_cart_total_is_zero():
    assert Cart().total() == 0
