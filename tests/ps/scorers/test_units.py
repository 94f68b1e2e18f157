"""psgrpo.ps.scorers.units: units of one dimension mixed inside an equation, and what is not judged."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.ps.scorers.reference import ReferenceVerifier
from psgrpo.ps.scorers.units import unit_mismatch


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
