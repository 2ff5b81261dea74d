CODES = {"SAVE10": 10, "HALF": 50}


def apply_discount(amount: float, code: str | None = None) -> float:
    """Return `amount` reduced by the percentage that discount `code` grants."""
    if code is None:
        return amount
    percent = CODES.get(code.upper())
    if percent is None:
        raise ValueError(f"unknown discount code {code!r}")
    return amount - amount * percent / 1000
