from app.discount import apply_discount
from app.tax import add_tax


class Cart:
    def __init__(self) -> None:
        self.items: list[tuple[str, float, int]] = []

    def add(self, name: str, unit_price: float, qty: int = 1) -> None:
        if qty <= 0:
            raise ValueError("quantity must be positive")
        self.items.append((name, unit_price, qty))

    def count(self) -> int:
        return sum(qty for _, _, qty in self.items)

    def subtotal(self) -> float:
        return sum(price for _, price, qty in self.items)

    def total(self, code: str | None = None, tax_rate: float = 0.10) -> float:
        return round(add_tax(apply_discount(self.subtotal(), code), tax_rate), 2)
