"""How many significant digits a number is written with: what a sender can hide in a number the
broker echoes as written (a card number in an epsilon's numerator, a phone number as a bound).
Standard library only: the command line's and the API's light paths import it."""

from __future__ import annotations

from decimal import Decimal


def significant_digits(value: int | float | Decimal) -> int:
    """How many significant digits ``value`` is written with (trailing zeros aside).

    >>> significant_digits(120), significant_digits(0.95), significant_digits(33612345678)
    (2, 2, 11)
    """
    number = value if isinstance(value, Decimal) else Decimal(repr(value))
    return len(number.normalize().as_tuple().digits)
