"""Attribute names compare by one key: case, look-alike letters and invisible characters aside."""

import pytest

from broker.columns.names import attribute_key, colliding_names


@pytest.mark.parametrize(
    "spelling",
    [
        "NIN",
        "nin",
        " NIN ",
        "ＮＩＮ",  # fullwidth
        "N\u200bIN",  # zero-width space
        "N\u00adIN",  # soft hyphen
        "NI\u2060N",  # word joiner
        "\ufeffNIN",  # byte order mark
        "NIN\U000e0041",  # a tag character
        "ΝΙΝ",  # Greek capital nu, iota, nu
        "Νin",  # one Greek letter among Latin ones
        "NlN",  # lower-case L for I
    ],
)
def test_spellings_a_reader_takes_for_nin_share_its_key(spelling):
    assert attribute_key(spelling) == attribute_key("NIN")


@pytest.mark.parametrize(
    ("a", "b"), [("age", "sex"), ("date", "data"), ("zip", "sip"), ("name", "nane")]
)
def test_different_names_keep_different_keys(a, b):
    assert attribute_key(a) != attribute_key(b)


def test_collisions_are_found_in_order():
    assert colliding_names(["age", "NIN", "sex", "nin"]) == ("NIN", "nin")
    assert colliding_names(["age", "sex"]) is None
