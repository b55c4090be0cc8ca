"""Privacy budget arithmetic in exact fractions.

Sequential composition (Dwork, McSherry, Nissim and Smith 2006; Dwork and Roth, "The
Algorithmic Foundations of Differential Privacy", 2014, theorem 3.16): releases of
(epsilon_i, delta_i) about the same people are together (sum epsilon_i, sum delta_i)-private.
So a budget is a sum, and it must be a sum without rounding: ten releases of 0.1 must exactly
meet a budget of 1, never exceed it by a float's last bit (0.1 + ... + 0.1 is
0.9999999999999999 in binary floating point) nor pass a release that overspends by one.

Every amount is a :class:`fractions.Fraction`. Amounts are written in decimal by people
(``"0.1"``, ``"1e-6"``) and parsed exactly; they are stored as ``"num/den"`` text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from broker.columns.digits import significant_digits

# The most digits an amount may be written with: "0.1" is fine, a 10,000-digit fraction is a
# denial of service on every later sum; so is "1e-999999", hence the smallest amounts.
MAX_DIGITS = 40
SMALLEST_EPSILON = Fraction(1, 10**6)  # below it an answer is nothing but noise
LARGEST_EPSILON = Fraction(1000)
SMALLEST_DELTA = Fraction(1, 10**20)  # a delta above 0, but not below this


class BudgetError(ValueError):
    """An amount a person wrote that is not a usable epsilon or delta."""


def parse_amount(text: str | float | int | Fraction, name: str = "epsilon") -> Fraction:
    """``text`` as an exact fraction: decimal notation (``"0.5"``, ``"1e-6"``), a fraction
    (``"1/3"``) or a number; floats are taken as the decimal they print as.

    Examples
    --------
    >>> parse_amount("0.1"), parse_amount("1e-6", "delta"), parse_amount("1/3"), parse_amount(0.1)
    (Fraction(1, 10), Fraction(1, 1000000), Fraction(1, 3), Fraction(1, 10))
    >>> parse_amount("abc")
    Traceback (most recent call last):
    ...
    broker.privacy.budget.BudgetError: epsilon 'abc' is not a number (write it as 0.5, 1e-6 or 1/3)
    """
    if isinstance(text, Fraction):
        return text
    if isinstance(text, bool):
        raise BudgetError(f"{name} {text!r} is not a number")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        text = repr(text)
    written = str(text).strip()
    if len(written) > MAX_DIGITS:
        raise BudgetError(f"{name} is written with more than {MAX_DIGITS} characters")
    try:
        if "/" in written:
            numerator, denominator = written.split("/", 1)
            value = Fraction(int(numerator), int(denominator))
        else:
            decimal = Decimal(written)
            if not decimal.is_finite():
                raise InvalidOperation
            if not -60 <= decimal.adjusted() <= 60:
                raise OverflowError
            value = Fraction(decimal)
    except OverflowError:
        raise BudgetError(f"{name} {written!r} is out of range") from None
    except (ValueError, ZeroDivisionError, InvalidOperation):
        raise BudgetError(
            f"{name} {written!r} is not a number (write it as 0.5, 1e-6 or 1/3)"
        ) from None
    return value


def _stated(value: Fraction, name: str) -> Fraction:
    """An amount a sender states crosses the border in the release's document as written: not a
    way to carry a number of the sender's choosing (no privacy loss needs that precision).
    Stored amounts and the records' caps are read by :func:`parse_amount` alone."""
    if max(significant_digits(value.numerator), significant_digits(value.denominator)) > 6:
        raise BudgetError(
            f"{name} is written with more than 6 significant digits (write it as 0.5, 1e-6 or 1/3)"
        )
    return value


def positive_epsilon(text: str | float | int | Fraction) -> Fraction:
    """An epsilon a release may spend: a number above 0.

    Examples
    --------
    >>> positive_epsilon("0.25")
    Fraction(1, 4)
    >>> positive_epsilon("-1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    broker.privacy.budget.BudgetError: epsilon must be above 0 (it was -1): ...
    """
    value = _stated(parse_amount(text, "epsilon"), "epsilon")
    if value <= 0:
        raise BudgetError(
            f"epsilon must be above 0 (it was {show(value)}): epsilon = 0 would release nothing "
            "but noise, and a negative one means nothing"
        )
    if not SMALLEST_EPSILON <= value <= LARGEST_EPSILON:
        raise BudgetError(
            f"epsilon must lie between {show(SMALLEST_EPSILON)} and {show(LARGEST_EPSILON)} "
            f"(it was {show(value)})"
        )
    return value


def delta_amount(text: str | float | int | Fraction | None) -> Fraction:
    """A delta: 0 (none, the default) up to below 1."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return Fraction(0)
    value = _stated(parse_amount(text, "delta"), "delta")
    if not 0 <= value < 1:
        raise BudgetError(f"delta must be at least 0 and below 1 (it was {show(value)})")
    if 0 < value < SMALLEST_DELTA:
        raise BudgetError(f"delta must be 0 or at least 1e-20 (it was {show(value)})")
    return value


def show(amount: Fraction) -> str:
    """An amount for people: exact decimal when it has one of at most 12 digits, else a
    fraction with its approximate value.

    Examples
    --------
    >>> show(Fraction(1, 10)), show(Fraction(3)), show(Fraction(1, 3)), show(Fraction(1, 10**6))
    ('0.1', '3', '1/3 (about 0.3333)', '0.000001')
    """
    if amount.denominator == 1:
        return str(amount.numerator)
    for places in range(1, 13):
        if (amount * 10**places).denominator == 1:
            return f"{Decimal(amount.numerator) / Decimal(amount.denominator):f}"
    return f"{amount.numerator}/{amount.denominator} (about {float(amount):.4g})"


def stored(amount: Fraction) -> str:
    """The exact text an amount is stored as (``"1/10"``), read back by :func:`parse_amount`."""
    return f"{amount.numerator}/{amount.denominator}"


def total(amounts: Iterable[Fraction]) -> Fraction:
    """Sequential composition: the sum, exactly."""
    return sum(amounts, Fraction(0))


def float_at_most(amount: Fraction) -> float:
    """The largest float not above ``amount``: what a mechanism is calibrated to, so that the
    privacy it spends never exceeds, by a rounding, the exact amount recorded.

    Examples
    --------
    >>> float(Fraction(1, 10)) > Fraction(1, 10), float_at_most(Fraction(1, 10)) <= Fraction(1, 10)
    (True, True)
    """
    value = float(amount)
    if Fraction(value) > amount:
        value = math.nextafter(value, -math.inf)
    return value


def split(amount: Fraction, parts: int) -> list[Fraction]:
    """``amount`` in ``parts`` equal shares that add up to it exactly.

    Examples
    --------
    >>> split(Fraction(1), 3), total(split(Fraction(1), 3))
    ([Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)], Fraction(1, 1))
    """
    return [amount / parts] * parts


@dataclass(frozen=True)
class Budget:
    """One budget rule as a rule set states it: ``limit`` over ``days`` (None: for ever), for
    one key of the ledger (a dataset and a destination, or a source and a destination)."""

    limit: Fraction
    days: int | None


@dataclass(frozen=True)
class Standing:
    """Where a budget stands: what was spent in its window, and what a new release asks."""

    budget: Budget
    spent: Fraction
    asked: Fraction

    @property
    def remaining(self) -> Fraction:
        return max(self.budget.limit - self.spent, Fraction(0))

    @property
    def fits(self) -> bool:
        """The release fits when everything spent, itself included, stays within the limit:
        meeting it exactly is allowed."""
        return self.spent + self.asked <= self.budget.limit


@dataclass(frozen=True)
class Spend:
    """What one earlier release spent: of which dataset (its key), when."""

    dataset_key: str
    at: datetime
    epsilon: Fraction
    delta: Fraction


@dataclass(frozen=True)
class Asked:
    """What a new release asks to spend, of which dataset."""

    dataset_key: str
    epsilon: Fraction
    delta: Fraction
