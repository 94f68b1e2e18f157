"""psgrpo.rewards.numbers: numbers as people write them, and as a policy may write them."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.rewards.numbers import MAX_NUMBER_DIGITS, format_number, parse_number


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,000", 1000),
        ("$18", 18),
        ("18.0", 18),
        ("-3", -3),
        ("−3", -3),
        ("3/4", Fraction(3, 4)),
        ("50%", 50),
        (" 7. ", 7),
    ],
)
def test_parse_number(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["", "two", "3 4", "1/0", "9" * (MAX_NUMBER_DIGITS + 1), "1." + "0" * 5000])
def test_not_a_number(text):
    assert parse_number(text) is None  # never Python's "Exceeds the limit (4300 digits)" ValueError


def test_the_longest_number_still_parses():
    assert parse_number("9" * MAX_NUMBER_DIGITS) == 10**MAX_NUMBER_DIGITS - 1


@given(st.text(max_size=200))
def test_any_text_parses_or_is_none(text):
    value = parse_number(text)
    assert value is None or isinstance(value, Fraction)


def test_format_number():
    assert format_number(Fraction(18)) == "18" and format_number(Fraction(1, 3)) == "0.333333"
