"""A tiny shopping cart."""

from app.cart import Cart

__all__ = ["Cart"]
