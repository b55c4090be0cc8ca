"""Budget arithmetic: exact fractions, composition, the limit met exactly, and bad amounts."""

from fractions import Fraction

import pytest

from broker.privacy.budget import (
    Budget,
    BudgetError,
    Standing,
    delta_amount,
    float_at_most,
    parse_amount,
    positive_epsilon,
    show,
    split,
    stored,
    total,
)


def test_ten_releases_of_a_tenth_meet_a_budget_of_one_exactly():
    spent = total([parse_amount("0.1")] * 10)
    assert spent == 1
    assert sum([0.1] * 10) != 1  # what floats would have recorded
    assert Standing(Budget(Fraction(1), None), spent - Fraction(1, 10), Fraction(1, 10)).fits


def test_one_release_more_is_refused_with_what_remains():
    standing = Standing(Budget(Fraction(1), 30), total([Fraction(1, 10)] * 10), Fraction(1, 10**9))
    assert not standing.fits
    assert standing.remaining == 0
    partly = Standing(Budget(Fraction(1), 30), Fraction(7, 10), Fraction(1, 2))
    assert not partly.fits and partly.remaining == Fraction(3, 10)


def test_composition_of_thirds_is_exact():
    shares = split(Fraction(1), 3)
    assert total(shares) == 1 and shares[0] == Fraction(1, 3)


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.5", Fraction(1, 2)), ("1e-6", Fraction(1, 10**6)), ("2/3", Fraction(2, 3)), (3, 3)],
)
def test_amounts_are_parsed_exactly(text, value):
    assert parse_amount(text) == value
    assert parse_amount(stored(value)) == value


@pytest.mark.parametrize("bad", ["0", "-0.5", "nan", "inf", "abc", "1/0", "", True])
def test_epsilon_must_be_a_positive_number(bad):
    with pytest.raises(BudgetError, match="epsilon"):
        positive_epsilon(bad)


def test_a_huge_written_amount_is_refused():
    with pytest.raises(BudgetError, match="more than"):
        positive_epsilon("1" * 100)
    with pytest.raises(BudgetError, match="out of range"):
        positive_epsilon("1e-999999")  # a million-digit denominator in every later sum
    with pytest.raises(BudgetError, match=r"between 0\.000001 and 1000"):
        positive_epsilon("1e-7")
    with pytest.raises(BudgetError, match="0 or at least 1e-20"):
        delta_amount("1e-30")


@pytest.mark.parametrize("bad", ["1", "-1e-9", "2"])
def test_delta_lies_in_zero_to_one(bad):
    with pytest.raises(BudgetError, match="delta must be"):
        delta_amount(bad)
    assert delta_amount(None) == 0 and delta_amount("") == 0


def test_mechanisms_are_calibrated_at_or_below_the_exact_amount():
    for amount in (Fraction(1, 10), Fraction(1, 3), Fraction(2, 7), Fraction(1)):
        assert Fraction(float_at_most(amount)) <= amount
        assert amount - Fraction(float_at_most(amount)) < Fraction(1, 10**15)


def test_amounts_are_shown_in_decimal_when_they_have_one():
    assert [show(Fraction(1, 4)), show(Fraction(5)), show(Fraction(1, 7))] == [
        "0.25",
        "5",
        "1/7 (about 0.1429)",
    ]


def test_a_sender_states_amounts_of_six_digits_while_stored_amounts_read_whole():
    """What a sender writes crosses the border as written (a card number as epsilon's
    numerator); what the ledger stored, sums of earlier spends, is read back exactly."""
    with pytest.raises(BudgetError, match="more than 6 significant digits"):
        positive_epsilon("4111111111111111/4111111111111112")
    with pytest.raises(BudgetError, match="more than 6 significant digits"):
        delta_amount("0.0000001234567")
    assert positive_epsilon("1/3") == Fraction(1, 3)
    assert parse_amount(stored(Fraction(1, 3) + Fraction(1, 7) + Fraction(1, 1000003))) == (
        Fraction(1, 3) + Fraction(1, 7) + Fraction(1, 1000003)
    )
