def add_tax(amount: float, rate: float) -> float:
    """Return `amount` with sales tax at `rate` (0.10 is 10%) added."""
    if rate < 0:
        raise ValueError("tax rate cannot be negative")
    return amount * rate
