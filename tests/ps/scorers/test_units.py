"""psgrpo.ps.scorers.units: units of one dimension mixed inside an equation, a result in another
dimension than the gold's same value, and what is not judged."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.ps.scorers.reference import ReferenceVerifier
from psgrpo.ps.scorers.units import (
    DIMENSIONS,
    MONEY,
    quantities,
    result_quantities,
    result_quantity,
    unit_mismatch,
)


@pytest.mark.parametrize(
    "text",
    [
        "distance = 50km/hr * 3 days = 150 km",
        "he covers 50 km/hr x 3 days = 150 km",
        "4 feet + 3 inches = 7 feet",
        "10 minutes per day * 2 weeks = 20",
        r"\(50 \text{ km/hr} \times 3 \text{ days} = 150 \text{ km}\)",
        "2 pounds - 5 ounces = 3",
    ],
)
def test_mixed_units_of_one_dimension_are_seen(text: str) -> None:
    assert unit_mismatch(text)


@pytest.mark.parametrize(
    "text",
    [
        "50 km/hr * 3 hours = 150 km",
        "$20/hour * 35 hours/week = $700/week",
        "4 weeks/month * 6 days/week = 24 days/month",  # a rate times a rate: the weeks cancel
        "takes 12 minutes/day x 7 days = 84 minutes",
        "$5 + 3 hours",  # money and time: not one dimension, not judged
        "3 apples + 2 pears = 5 fruits",
        "5 + 3 = 8",
    ],
)
def test_matching_or_unknown_units_are_not_flagged(text: str) -> None:
    assert not unit_mismatch(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_judged_without_raising(text: str) -> None:
    assert unit_mismatch(text) in {True, False}
    assert all(isinstance(value, Fraction) for value, _ in quantities(text))
    result = result_quantity(text)
    assert result is None or result[1] in {MONEY, *DIMENSIONS}


def test_the_reference_scorer_blames_a_step_mixing_units():
    """A gold solution without equations on its path gives no reference values: the steps are judged
    on arithmetic, where ``50 km/hr * 3 days = 150`` holds; the unit flag blames it all the same."""
    gold, steps = (
        "He travels for 72 hours at that speed.\n#### 3600",
        ["He drives 50 km/hr * 3 days = 150 km."],
    )
    score = ReferenceVerifier(0.0, 1.0)(["q"], [steps], solution=[gold], answer=["3600"])[0]
    unflagged = ReferenceVerifier(0.0, 1.0, unit_flag=False)(
        ["q"], [steps], solution=[gold], answer=["3600"]
    )[0]
    assert (score, unflagged) == ([0.0], [1.0])
    right = ["He drives 50 km/hr * 72 hours = 3600 km."]
    assert ReferenceVerifier(0.0, 1.0)(["q"], [right], solution=[gold], answer=["3600"])[0] == [1.0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$36 / 4 = $9 per hour", [(36, "money"), (9, "money")]),
        ("£36 / 4 = € 9 and ¥2 for 3 hours", [(36, "money"), (9, "money"), (2, "money"), (3, "time")]),
        ("8 / 4 = 2 hours to dig", [(2, "time")]),
        ("4 feet/hour / 2 = 2 feet/hour", [(4, "length"), (2, "length")]),
        ("1,200 dollars, 30 cents and 3.5 km", [(1200, "money"), (30, "money"), (Fraction(7, 2), "length")]),
        ("3 * 5 = 15   degrees", [(15, "temperature")]),  # LaTeX leaves spaces: 15 \text{ degrees}
        ("12 green cards, 50%, 7 and 1,2,3", []),  # another word, a percentage, nothing, a list
    ],
)
def test_quantities_read_the_dimension_written_after_a_number(text, expected) -> None:
    assert quantities(text) == [(Fraction(v), d) for v, d in expected]


def test_a_result_is_the_first_quantity_after_each_equals_sign() -> None:
    gold = (
        "12 miles / 4 mph = 3 hours. Then 3 hours - 1 hour - 1 hour = 1 hour, and 12 - 4 - 2 miles = 6 miles"
    )
    assert result_quantities(gold) == [(3, "time"), (1, "time"), (6, "length")]
    assert result_quantity(r"so \(\$36 \div 4 = \$9\) per hour") == (9, "money")
    assert result_quantity("She sells 36 cups.") is None
    assert result_quantity("3 * 4 = 12, so the apples cost $24") is None  # the result 12 has no unit
    assert result_quantity("He spent 6*2 = $<<6*2=12>>12 on peaches.") == (12, "money")
    assert result_quantity("It takes 36/4=<<36/4=9>>9 hours.") == (9, "time")


def test_the_reference_scorer_blames_a_gold_value_reached_in_another_dimension() -> None:
    """Real dev solution mr-43a13978: the gold's 9 is hours (36 cups / 4 cups an hour); ``$36 / 4 =
    $9 per hour`` reaches 9 as money, by coincidence, and is the first wrong step."""
    gold = "She makes 3 * 12 = <<3*12=36>>36 cups.\nShe sells them for 36 * $1 = $<<36*1=36>>36.\n"
    gold += "Her profit is $36 - $18 = $<<36-18=18>>18.\nSelling takes 36 / 4 = <<36/4=9>>9 hours.\n"
    gold += "Per hour: $18 / 9 hours = $<<18/9=2>>2 per hour."
    steps = ["She makes 3 x 12 = 36 cups.", "She gets 36 x $1 = $36.", "She makes $36 / 4 = $9 per hour."]
    steps += ["So the profit per hour is $9 - $18 = -$9.", "#### 9"]
    scores = ReferenceVerifier(0.0, 1.0)(["q"], [steps], solution=[gold], answer=["2"])[0]
    assert scores[:3] == [1.0, 1.0, 0.0]
    hours = [*steps[:2], "Selling takes 36 / 4 = 9 hours.", "$36 - $18 = $18", "$18 / 9 = $2 per hour."]
    assert ReferenceVerifier(0.0, 1.0)(["q"], [hours], solution=[gold], answer=["2"])[0] == [1.0] * 5
    unchecked = ReferenceVerifier(0.0, 1.0, unit_flag=False)(["q"], [steps], solution=[gold], answer=["2"])[0]
    assert unchecked[2] == 1.0
