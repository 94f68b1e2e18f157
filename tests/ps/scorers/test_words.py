"""psgrpo.ps.scorers.words: equations written with units, currency, percentages and operator words,
and prose that must not be read as arithmetic."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.ps.scorers.equations import extract_equations, extract_step


def read(text: str) -> list[tuple[str, str, bool]]:
    """``(lhs, rhs, holds)`` of every equation read from ``text``."""
    return [(eq.lhs_text, eq.rhs_text, eq.holds) for eq in extract_equations(text)]


@pytest.mark.parametrize(
    ("text", "lhs", "rhs"),
    [
        ("She buys 22 pens + 10 pens = 32 pens.", "22 pens + 10", "32"),
        ("45 minutes - 10 minutes - 5 minutes = 30 minutes", "45 minutes - 10 minutes - 5", "30"),
        ("He drives 50 km/hr * 3 hours = 150 km", "50 km/hr * 3", "150"),
        ("80 GB / 2 GB/minute = 40 minutes", "80 GB / 2", "40"),
        ("$20/hour * 35 hours/week = $700/week", "$20/hour * 35", "$700"),
        ("Janet has 16 eggs - 3 eggs for breakfast - 4 eggs for muffins = 9 eggs", "16 eggs - 3 eggs", "9"),
        ("He pays $12 x 4 = $48 for the shirts.", "$12 x 4", "$48"),
        ("Each ticket costs $1.50 × 6 = $9.", "$1.50 × 6", "$9"),
        ("So 20% of 80 = 16 students passed.", "20% of 80", "16"),
        ("She uses 2/3 of 24 = 16 cups.", "2/3 of 24", "16"),
        ("She uses 2/3 * 24 cups = 16 cups.", "2/3 * 24", "16"),
        ("Half of 30 is 15.", "Half of 30", "15"),
        ("So a quarter of 88 daily flights is 22 flights.", "quarter of 88", "22"),
        ("He sold 3 customers × 1 DVD each = 3 DVDs.", "3 customers × 1", "3"),
        ("There are 60 / 1 = 60 servings.", "60 / 1", "60"),
        ("The cubes used 7 times 2 equals 14 ounces.", "7 times 2", "14"),
        ("He has 32 minus 30 equals 2 left.", "32 minus 30", "2"),
        ("The total is twice 54 is 108 seashells.", "twice 54", "108"),
        ("It takes 3 miles * (5280 feet / 1 mile) = 15840 feet.", "3 miles * (5280 feet / 1 mile)", "15840"),
        ("They bought 60/4 = 15 4-packs of yogurt.", "60/4", "15"),
        ("Her break is 30+30 = 60-minute long.", "30+30", "60"),
        ("In all, a total of 9 + 6 = 15 liters.", "9 + 6", "15"),
        ("There are 10 2-legged animals * 2 legs per animal = 20 legs.", "10 2-legged animals * 2", "20"),
        # words before ``of`` after a whole number are prose, not a unit inside ``5 of 5*2``
        ("He spent 5 hours each week for a total of 5*2 = 10 hours.", "5*2", "10"),
        ("It had 3 rows in a total of 3 x 4 = 12 seats.", "3 x 4", "12"),
    ],
)
def test_equations_with_words_between_the_numbers_are_read(text, lhs, rhs):
    equations = extract_equations(text)
    assert [(eq.lhs_text.startswith(lhs), eq.rhs_text, eq.holds) for eq in equations] == [(True, rhs, True)]


def test_a_wrong_equation_with_units_is_read_as_wrong():
    assert read("22 pens + 10 pens = 33 pens") == [("22 pens + 10", "33", False)]
    assert read("20% of 80 = 15") == [("20% of 80", "15", False)]
    assert read("half of 30 is 14") == [("half of 30", "14", False)]


@pytest.mark.parametrize(
    "text",
    [
        "He worked 5 days a week for 3 weeks.",
        "She arrives at 3:30 and leaves at 5:45.",
        "In 2019 she was 12 years old.",
        "He is 12 years old.",
        "Each box holds 4 pens, and there are 3 boxes.",
        "So 12 inches = 1 foot.",
        "He ran 3 times a day for 4 days.",
        "The answer is 29 times.",
        "It costs $5 per hour - a bargain.",
        "She read 20 pages on Monday; 15 pages on Tuesday.",
        "There are 24 eggs in 1 tray x 2 trays = 48 eggs.",  # a rate's 1: not the claim 1 x 2 = 48
    ],
)
def test_prose_with_numbers_is_not_read_as_an_equation(text):
    assert extract_equations(text) == []


def test_a_unit_conversion_in_a_chain_is_not_an_equation_between_its_numbers():
    # 12 inches = 1 foot is a conversion: the chain stops before it instead of claiming 12 = 1
    assert read("He lifts it 12*1=12 inches=1 foot.") == [("12*1", "12", True)]


def test_algebra_next_to_words_stays_skipped():
    assert extract_equations("2x + 3 = 9") == []
    assert extract_equations("We get 2L = 22 - 8 = 14") != []  # the arithmetic right of the variable
    assert all(eq.lhs_text != "2" for eq in extract_equations("We get 2L = 22 - 8 = 14"))


def test_words_do_not_change_what_the_step_uses_or_states():
    step = extract_step("She has 16 eggs - 3 eggs = 13 eggs left")
    assert [value for _, value in step.results] == [Fraction(13)]
    assert sorted(step.operands) == [Fraction(3), Fraction(16)]


UNITS = st.sampled_from(
    ["", " pens", " eggs for breakfast", " km/hr", " minutes", " cups of flour", " DVDs each"]
)


@settings(max_examples=200, deadline=None)
@given(
    a=st.integers(1, 999),
    b=st.integers(1, 999),
    op=st.sampled_from(["+", "-", "*", "x", "×"]),
    unit_a=UNITS,
    unit_b=UNITS,
    unit_c=UNITS,
    delta=st.integers(-9, 9),
)
def test_random_equations_with_units_are_read_and_judged(a, b, op, unit_a, unit_b, unit_c, delta):
    true = a + b if op == "+" else a - b if op == "-" else a * b
    text = f"So {a}{unit_a} {op} {b}{unit_b} = {true + delta}{unit_c}."
    [equation] = extract_equations(text)
    assert equation.lhs_value == true and equation.rhs_value == true + delta
    assert equation.holds == (delta == 0)


WORDS = st.sampled_from(
    ["days", "a", "week", "for", "weeks", "and", "he", "worked", "pens", "each", "of", "in"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(WORDS, st.integers(0, 2100).map(str)), min_size=1, max_size=14))
def test_prose_without_an_operator_and_an_equals_sign_is_never_an_equation(words):
    assert extract_equations(" ".join(words) + ".") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("one-half of 30 is 15", [("half of 30", "15", True)]),  # was misread as -half of 30 = 15, false
        (
            "It takes 45 rooms * 20 minutes/room = 900 minutes to clean one-half of the rooms.",
            [("45 rooms * 20", "900", True)],
        ),
        ("twenty-five + 5 = 30", [("twenty-five + 5", "30", True)]),
    ],
)
def test_a_hyphen_between_words_is_never_a_minus(text, expected):
    assert read(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("He did 20 push-ups x 3 = 60 push-ups", [("20 push-ups x 3", "60", True)]),
        ("4 sit-ups * 3 sets = 12 sit-ups", [("4 sit-ups * 3", "12", True)]),
    ],
)
def test_a_hyphenated_unit_stays_a_unit(text, expected):
    assert read(text) == expected
