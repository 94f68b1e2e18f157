"""psgrpo.ps.scorers.dependencies: necessary = on the dependency path to the final answer, and not a no-op."""

from __future__ import annotations

from fractions import Fraction

import pytest

from psgrpo.ps.scorers.arithmetic import score_steps
from psgrpo.ps.scorers.dependencies import answer_value, dependency_graph, dependency_path, noop_steps
from psgrpo.ps.scorers.equations import extract_step

# --------------------------------------------------------------------------- the dependency path


def necessary(steps: list[str], final_answer: str | None) -> list[bool]:
    return [v.necessary for v in score_steps(steps, final_answer)]


HONEST = ["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9"]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (HONEST, [True, True]),
        (
            ["Step 1: 1 + 1 = 2", "Step 2: 2 + 2 = 4", *HONEST],
            [False, False, True, True],
        ),  # unrelated, chained
        (
            ["Step 1: 7 + 5 = 12", "Step 2: 12 + 0 = 12", "Step 3: 12 * 1 = 12", "Step 4: 12 - 3 = 9"],
            [True] + [False] * 2 + [True],
        ),
        (["Step 1: 7 + 5 = 12", "Step 2: 12 + 5 - 5 = 12", "Step 3: 12 - 3 = 9"], [True, False, True]),
        (["Step 1: 7 + 5 = 12", *HONEST], [False, True, True]),  # the earlier copy of a repeated step
        (["Step 1: 7 + 5 = 12", "Step 2: 9 * 1 = 9", "Step 3: 12 - 3 = 9"], [True, False, True]),
        (
            ["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9", "Step 3: 9 * 1 = 9"],
            [True, True, False],
        ),  # no-op answer
        # a question quantity + 0 (or × 1) that the solution then uses is real work (3 customers × 1 DVD
        # each = 3 DVDs); unused, or passing a computed value through, it is a no-op
        (["Step 1: 7 + 0 = 7", "Step 2: 7 + 5 = 12", "Step 3: 12 - 3 = 9"], [True, True, True]),
        (["Step 1: 4 * 1 = 4", "Step 2: 7 + 5 = 12", "Step 3: 12 - 3 = 9"], [False, True, True]),
    ],
)
def test_necessary_means_on_the_dependency_path_and_not_a_noop(steps, expected):
    assert necessary(steps, "9") == expected


def test_noop_steps_are_flagged_and_keep_their_correctness():
    verdicts = score_steps(["Step 1: 7 + 5 = 12", "Step 2: 12 * 1 = 12", "Step 3: 12 - 3 = 9"], "9")
    assert [v.noop for v in verdicts] == [False, True, False]
    assert [v.score() for v in verdicts] == pytest.approx([1.0, 0.6, 1.0])


def test_a_multiplication_of_a_running_total_of_one_is_real_work():
    # arith gold: the running value 1 doubled; 2 passes through 1 * 2, but the 1 was computed by step 1
    assert necessary(["Step 1: 2 - 1 = 1", "Step 2: 1 * 2 = 2", "Step 3: 2 * 2 = 4"], "4") == [True] * 3
    assert [v.noop for v in score_steps(["Step 1: 1 * 2 = 2"], "2")] == [True]


def test_a_value_used_twice_links_to_both_steps_that_gave_it():
    steps = ["Step 1: 2 * 10 = 20", "Step 2: 4 * 5 = 20", "Step 3: 20 + 20 + 15 = 55"]
    assert necessary(steps, "55") == [True, True, True]
    assert necessary(["Step 1: 2 * 10 = 20", "Step 2: 4 * 5 = 20", "Step 3: 20 + 15 = 35"], "35") == [
        False,
        True,
        True,
    ]


def test_a_value_the_step_computed_itself_is_not_an_earlier_steps():
    steps = ["Step 1: 3 + 9 = 12", "Step 2: 7 + 5 = 12 and 12 - 3 = 9"]
    assert necessary(steps, "9") == [False, True]


def test_annotation_operands_and_divisions_written_as_fractions_link_the_path():
    steps = [
        "100-60=<<100-60=40>>40 points.",
        "Then 40*3=<<40*3=120>>120 minutes.",
        "And 120/60=<<120/60=2>>2 hours.",
    ]
    assert necessary(steps, "2") == [True, True, True]


def test_a_detour_that_returns_to_a_known_value_stays_on_the_path():
    # documented limit (docs/robustness.md): value-level dependencies cannot tell 12 + 1 = 13, 13 - 1 = 12
    # from buying and giving away the same number; a count-neutral ps_advantage_mode makes it pay nothing
    steps = ["Step 1: 7 + 5 = 12", "Step 2: 12 + 1 = 13", "Step 3: 13 - 1 = 12", "Step 4: 12 - 3 = 9"]
    assert necessary(steps, "9") == [True] * 4


def test_dependency_path_and_noop_steps_on_extracted_steps():
    steps = ["Step 1: 1 + 1 = 2", "Step 2: 7 + 5 = 12", "Step 3: 12 * 1 = 12", "Step 4: 12 - 3 = 9"]
    found = [extract_step(step) for step in steps]
    # step 4 uses 12: the no-op step 3 stated it last, and the path goes on through it to step 2
    assert dependency_path(found, answer_value("9")) == {1, 2, 3}
    assert noop_steps(found) == [False, False, True, False]
    assert dependency_path(found, None) == set()
    assert answer_value("about 9 pens") == 9 and answer_value("9 or 10") is None


def test_the_dependency_graph_links_each_step_to_the_steps_it_uses():
    steps = [
        "Janet uses 3 + 4 = 7 eggs a day.",
        "She eats 2 * 5 = 10 more in a week.",
        "She sells 16 - 7 = 9 eggs.",
        "She makes 9 * $2 = $18.",
    ]
    found = [extract_step(step) for step in steps]
    assert dependency_graph(found) == [set(), set(), {0}, {2}]
    # a quantity of the question times one, then used, is work; unused, it pads
    used = [extract_step(s) for s in ["3 customers × 1 DVD each = 3 DVDs.", "He sells 3 + 4 = 7 DVDs."]]
    assert noop_steps(used) == [False, False]
    assert noop_steps(used[:1]) == [True]


def test_a_negative_result_links_to_the_step_that_uses_it():
    """``-30 / 3`` uses -30 (a glued sign after nothing, an operator, ``=`` or a gap), so the step
    that gave -30 is on the path; ``20 - 50 = -30`` does not take the link of a 30 used unsigned."""
    steps = ["The total is -48 + 21 + -3 = -30 degrees.", "The average is -30 / 3 = -10 degrees."]
    assert necessary(steps, "-10") == [True, True]
    assert dependency_path([extract_step(s) for s in steps], answer_value("-10")) == {0, 1}
    assert [v for _, v in extract_step("so 5 -3 = 2, 4 - 3 = 1, it is -6 + 3 = -3").uses if v < 0] == [-6]
    mixed = [
        "He buys 10 + 20 = 30 apples.",
        "He had 20 and needed 50, so 20 - 50 = -30: he is short.",
        "Each of 3 friends gets 30 / 3 = 10 apples.",
    ]
    assert dependency_graph([extract_step(s) for s in mixed])[2] == {0}
    assert necessary(mixed, "10") == [True, False, True]
    assert dependency_path(
        [extract_step(s) for s in ["He earns 5 + 5 = 10.", "10 - 20 = -10 short."]], 10
    ) == {0}


def test_a_fraction_written_as_a_number_links_to_the_step_that_computed_it():
    """``4 + 1/2`` uses 1 and 2, and the 1/2 an earlier step computed (``1/4 * 2 = 1/2``)."""
    steps = [
        "Team A scores 1/4 * 2 = 1/2 goal.",
        "Team B scores 4 * 2 = 8 goals.",
        "In all, 4 + 1/2 = 4.5 goals.",
    ]
    assert dependency_graph([extract_step(s) for s in steps]) == [set(), set(), {0}]
    assert [v for _, v in extract_step("It takes 3 1/2 hours.").uses] == [3, 1, 2, Fraction(7, 2)]
    assert [v for _, v in extract_step("so -1/2 + 1 = 1/2").uses] == [-1, -2, Fraction(-1, 2), 1]


def test_a_division_written_without_spaces_does_not_use_its_own_result():
    """``24/2 = 12`` computes 12 (found by review: it linked to an earlier 12); ``-1/2 + 1`` uses -1/2."""
    assert dependency_graph([extract_step(s) for s in ["5 + 7 = 12", "24/2 = 12"]]) == [set(), set()]
    assert dependency_graph([extract_step(s) for s in ["5 + 7 = 12", r"\frac{24}{2} = 12"]]) == [set(), set()]
    assert Fraction(-1, 2) in [v for _, v in extract_step("so -1/2 + 1 = 1/2").uses]
