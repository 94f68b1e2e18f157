"""Tests for psgrpo.ps.scorers.arithmetic: equation extraction, safe evaluation, necessity, scores and limits."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.ps.scorers.arithmetic import (
    MAX_EXPRESSION_TOKENS,
    MAX_LITERAL_DIGITS,
    MAX_NESTING,
    MAX_VALUE_BITS,
    ArithmeticVerifier,
    Equation,
    StepScore,
    evaluate_text,
    extract_equations,
    score_steps,
    written_numbers,
)
from psgrpo.rewards import extract_answer


def holds(text: str) -> list[bool]:
    """The verdicts of the equations found in ``text``, in order."""
    return [eq.holds for eq in extract_equations(text)]


def scores(steps: list[str], final_answer: str | None = None, **weights: float) -> list[float]:
    """Combined scores of one completion's steps."""
    return [s.score(**weights) for s in score_steps(steps, final_answer)]


# --------------------------------------------------------------------------- evaluation


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2 * 3 + 4", 10),
        ("2 * (3 + 4)", 14),
        ("16 - 3 - 4", 9),
        ("-3 + 5", 2),
        ("8 / 4 / 2", 1),
        ("10 − 4", 6),
        ("3 × 4 ÷ 6", 2),
        ("3 x 4", 12),
        ("3(47)+12", 153),
        ("$1,000 + 2.5", Fraction(2005, 2)),
        ("3 1/2 - 2", Fraction(3, 2)),
        ("7 // 2", 3),
    ],
)
def test_evaluate_text_standard_precedence(text, value):
    assert evaluate_text(text) == value


@pytest.mark.parametrize("text", ["2 +", "(2 + 3", "two + 3", "", "2 3"])
def test_evaluate_text_rejects_non_expressions(text):
    assert evaluate_text(text) is None


def test_division_by_zero_evaluates_to_none():
    assert evaluate_text("5 / 0") is None
    assert evaluate_text("1 / (2 - 2)") is None


# --------------------------------------------------------------------------- extraction


def test_simple_and_chained_equations():
    assert holds("Step 1: 16 - 3 - 4 = 9") == [True]
    assert holds("2 * 3 + 4 = 10") == [True]
    assert holds("(2 + 3) * 4 = 5 * 4 = 20") == [True, True]
    assert holds("2 * 3 = 6 = 7") == [True, False]


def test_equation_fields():
    [eq] = extract_equations("She makes 9 * 2 = 18 dollars.")
    assert eq == Equation("9 * 2", "18", Fraction(18), Fraction(18), True)


def test_wrong_result_does_not_hold():
    [eq] = extract_equations("Step 1: 7 + 5 = 13")
    assert not eq.holds and eq.lhs_value == 12 and eq.rhs_value == 13


def test_several_equations_in_one_step():
    assert holds("He has 3 + 4 = 7 pens and 7 * 2 = 15 pencils.") == [True, False]


def test_gsm8k_annotation_is_one_equation():
    step = "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day."
    [eq] = extract_equations(step)
    assert (eq.lhs_text, eq.rhs_text, eq.holds) == ("16-3-4", "9", True)
    assert holds("It takes 48/2 = <<48/2=25>>25 hours.") == [False]


def test_commas_dollars_decimals_and_percent():
    assert holds("80,000+50,000=$<<80000+50000=130000>>130,000") == [True]
    assert holds("It costs $1,000 + $250.50 = $1,250.50 in total.") == [True]
    assert holds("He pays 1,000 * 1.5 = 1,500.") == [True]
    assert holds("100% - 70% = 30%") == [True]
    assert holds("3 / 6 = 50%") == [True]


def test_rounded_results_hold_to_the_written_precision():
    assert holds("10/3 = 3.33") == [True]
    assert holds("2/3 = 0.67") == [True]
    assert holds("2/3 = 0.6") == [False]
    assert holds("10/3 = 3") == [False]


def test_division_by_zero_does_not_hold():
    [eq] = extract_equations("Each gets 5 / 0 = 3 apples.")
    assert eq.lhs_value is None and not eq.holds


@pytest.mark.parametrize(
    "text",
    [
        "Let x be the number of apples.",
        "She has 12 apples and 3 pears.",
        "x = 5",
        "2x + 3 = 9",
        "Solve 9x=360 for x.",
        "15 pages x 1/3 = 5 pages",  # '15 pages × 1/3', not the claim 1/3 = 5
        "The answer is 12.",
    ],
)
def test_text_without_arithmetic_has_no_equation(text):
    assert extract_equations(text) == []


def test_operator_x_only_between_numbers():
    assert holds("3 x 4 = 12") == [True]
    assert extract_equations("x + 4 = 12") == []


# --------------------------------------------------------------------------- scoring and necessity


def test_correct_chain_scores_one():
    assert scores(["Step 1: 16 - 3 - 4 = 9", "Step 2: 9 * 2 = 18"], "18") == [1.0, 1.0]


def test_wrong_intermediate_result_loses_correctness_only():
    assert scores(["Step 1: 16 - 3 - 4 = 8", "Step 2: 8 * 2 = 16"], "16") == pytest.approx([0.4, 1.0])


def test_half_correct_step():
    assert scores(["3 + 4 = 7 and 7 * 2 = 15"], "7") == pytest.approx([0.6 * 0.5 + 0.4])


def test_step_without_equation_is_neutral_and_not_necessary():
    [verdict] = score_steps(["First, count the eggs."], None)
    assert verdict == StepScore(None, False, [])
    assert verdict.score() == 0.5


def test_unused_intermediate_result_is_not_necessary():
    verdicts = score_steps(["Step 1: 3 * 4 = 12", "Step 2: 5 + 5 = 10"], "10")
    assert [v.necessary for v in verdicts] == [False, True]
    assert [v.score() for v in verdicts] == pytest.approx([0.6, 1.0])


def test_result_used_in_later_prose_is_on_the_path():
    verdicts = score_steps(["Step 1: 3 * 4 = 12", "So she keeps 12 of them."], "12")
    assert [v.necessary for v in verdicts] == [True, False]


def test_without_a_final_answer_no_step_is_necessary():
    verdicts = score_steps(["Step 1: 3 * 4 = 12", "Step 2: 12 + 1 = 13"], None)
    assert [v.necessary for v in verdicts] == [False, False]


def test_last_step_necessary_only_if_it_gives_the_final_answer():
    assert [v.necessary for v in score_steps(["7 + 5 = 12"], "12")] == [True]
    assert [v.necessary for v in score_steps(["7 + 5 = 12"], "13")] == [False]
    assert [v.necessary for v in score_steps(["7 + 5 = 12"], None)] == [False]


def test_step_markers_and_later_results_are_not_operands():
    # "Step 2" is a label, and a later step that merely also computes 2 does not use step 1's 2.
    verdicts = score_steps(["Step 1: 1 + 1 = 2", "Step 2: 6 / 3 = 2", "Step 3: 3 + 4 = 7"], "7")
    assert [v.necessary for v in verdicts] == [False, False, True]


def test_segments_with_tags_and_markers():
    steps = ["<reasoning>\nStep 1: 1 + 1 = 2\n", "Step 2: 3 + 4 = 7\n</reasoning>\n<answer>7</answer>"]
    assert ArithmeticVerifier()(["Q"], [steps]) == [pytest.approx([0.6, 1.0])]


def test_divide_by_zero_step_scores_as_wrong():
    assert scores(["Step 1: 5 / 0 = 3", "Step 2: 3 + 1 = 4"], "4") == pytest.approx([0.4, 1.0])


# --------------------------------------------------------------------------- the scorer interface


def test_batch_returns_one_score_per_step():
    verifier = ArithmeticVerifier()
    steps = [
        ["Step 1: 7 + 5 = 12", "Step 2: 12 - 3 = 9", "<answer>9</answer>"],
        ["Step 1: 7 + 5 = 13", "I think so."],
    ]
    prompts = ["Q1", [{"role": "user", "content": "Q2"}]]
    result = verifier(prompts, steps, answer=["9", "12"])
    assert [len(r) for r in result] == [3, 2]
    assert result == [pytest.approx([1.0, 1.0, 0.5]), pytest.approx([0.0, 0.5])]


def test_final_answer_comes_from_the_steps_not_the_gold_column():
    verifier = ArithmeticVerifier()
    steps = [["7 + 5 = 12", "<answer>12</answer>"]]
    assert verifier(["Q"], steps, answer=["99"]) == [pytest.approx([1.0, 0.5])]
    assert extract_answer("\n".join(steps[0])) == "12"


def test_weights_are_configurable():
    verifier = ArithmeticVerifier(correct_weight=1.0, necessary_weight=0.0, neutral_score=-1.0)
    assert verifier(["Q"], [["Step 1: 3 * 4 = 12", "Step 2: 2 + 2 = 5", "Hmm."]]) == [
        pytest.approx([1.0, 0.0, -1.0])
    ]
    verdicts = verifier.score_steps(["Step 1: 3 * 4 = 12"], "12")
    assert verdicts[0].score(0.5, 0.5, 0.0) == 1.0


def test_mismatched_batch_is_an_error():
    with pytest.raises(ValueError, match="2 prompts"):
        ArithmeticVerifier()(["a", "b"], [["1 + 1 = 2"]])


# --------------------------------------------------------------------------- properties and gold data

OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "x": lambda a, b: a * b}


@settings(max_examples=100, deadline=None)
@given(
    a=st.integers(-999, 999),
    b=st.integers(-999, 999),
    op=st.sampled_from(["+", "-", "*", "x", "/"]),
    delta=st.integers(-50, 50).filter(bool),
)
def test_random_equations_right_and_wrong(a, b, op, delta):
    if op == "/":  # keep the quotient an integer: a is a multiple of b
        b = b or 1
        a, true = a * b, a
    else:
        true = OPS[op](a, b)
    # |true| < 10**6 and |delta| >= 1, so the default rel_tol=1e-6 cannot hide the error
    assert holds(f"Step 1: {a} {op} {b} = {true}") == [True]
    assert holds(f"Step 1: {a} {op} {b} = {true + delta}") == [False]


def test_arith_gold_solutions_score_one():
    from psgrpo.data.arith import make_arith_dataset

    verifier = ArithmeticVerifier()
    for row in make_arith_dataset("test", n=50):
        steps = [line for line in row["solution"].splitlines() if line.startswith("Step")]
        verdicts = verifier.score_steps(steps, extract_answer(row["solution"]))
        assert all(v.correct == 1.0 and v.necessary for v in verdicts), (steps, verdicts)
        assert verifier(["Q"], [steps + [f"<answer>{row['answer']}</answer>"]])[0][:-1] == [1.0] * len(steps)


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
        (["Step 1: 7 + 0 = 7", "Step 2: 7 + 5 = 12", "Step 3: 12 - 3 = 9"], [False, True, True]),
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


@pytest.mark.parametrize(
    ("text", "number", "others"),
    [
        ("12 + 0", 12, (0,)),
        ("12 * 1", 12, (1,)),
        ("0 + 12", 12, (0,)),
        ("12 + 5 - 5", 12, (5, 5)),
        ("12 / 1", 12, (1,)),
    ],
)
def test_pass_through(text, number, others):
    [eq] = extract_equations(f"{text} = {number}")
    assert eq.passes_through == tuple(Fraction(o) for o in others)


@pytest.mark.parametrize(
    "text", ["4 - 2 = 2", "4 / 2 = 2", "2 * 2 = 4", "6 - 3 = 3", "2 * 2 - 2 = 2", "12 // 1 = 12"]
)
def test_not_pass_through(text):
    [eq] = extract_equations(text)
    assert eq.passes_through is None


@pytest.mark.parametrize(
    ("token", "numbers"),
    [
        ("120/60", [120, 60]),
        ("3 1/2", [3, 1, 2]),
        ("$1,000", [1000]),
        ("50%", [50]),
        ("1½", [Fraction(3, 2)]),
    ],
)
def test_written_numbers(token, numbers):
    assert written_numbers(token) == numbers


# --------------------------------------------------------------------------- never raises, bounded work

HOSTILE = {
    "3,000 divisions": "Step 1: 1" + " / 7" * 3000 + " = 0",
    "2,000 nested parentheses": "Step 1: " + "(" * 2000 + "1" + ")" * 2000 + " = 1",
    "2,000 factors of 99999": "Step 1: " + " * ".join(["99999"] * 2000) + " = 1",
    "a 10,000-digit number": "Step 1: " + "9" * 10_000 + " + 1 = 2",
    "2,000 minus signs": "Step 1: 1 = " + "-" * 2000 + "1",
    "a 10,000-digit annotation": "<<" + "9" * 10_000 + "+1=2>>2",
    "an annotation of 1,000 terms": "<<" + "+".join(["1"] * 1000) + "=1000>>1000",
    "a 60-digit number": "Step 1: " + "1" * 60 + " + 1 = 2",
    "deep parentheses, then a plain equation": "Step 1: " + "(" * 100 + " 2 = 2, 7 + 5 = 12",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_arithmetic_is_counted_not_raised(name):
    [verdict] = ArithmeticVerifier().score_steps([HOSTILE[name]], None)
    assert verdict.unparsed >= 1
    assert all(eq.holds is not None for eq in verdict.equations)


def test_hostile_steps_next_to_honest_ones_leave_the_honest_verdicts_alone():
    verifier = ArithmeticVerifier()
    steps = [
        "Step 1: 7 + 5 = 12\n",
        HOSTILE["3,000 divisions"] + "\n",
        "Step 3: 12 - 3 = 9\n<answer>9</answer>",
    ]
    assert verifier(["Q"], [steps]) == [pytest.approx([1.0, 0.5, 1.0])]
    assert verifier.pop_counts() == {
        "steps": 3, "no_equation": 1, "noop": 0, "unnecessary": 0, "unparsed_equations": 1
    }  # fmt: skip
    assert verifier.pop_counts()["steps"] == 0  # popping resets


def test_a_long_expression_within_the_limits_is_still_judged():
    terms = 60  # 119 tokens, under MAX_EXPRESSION_TOKENS
    assert holds("+".join(["1"] * terms) + f" = {terms}") == [True]
    assert holds("(" * 30 + "2" + ")" * 30 + " * 3 = 6") == [True]
    assert (
        holds(" * ".join(["99"] * 100) + f" = {99**100}") == []
    )  # the right side has 200 digits: not checkable


def test_values_beyond_the_size_limit_are_not_checkable():
    big = " * ".join(["9999999999"] * 40)  # about 1,330 bits
    [verdict] = score_steps([f"{big} = 1"], None)
    assert verdict.equations == [] and verdict.unparsed == 1
    assert evaluate_text(big) is None


def test_budget_limits_are_finite_and_consistent():
    assert MAX_EXPRESSION_TOKENS < 1000 and MAX_NESTING * 4 < 500  # far from Python's recursion limit
    assert MAX_LITERAL_DIGITS * 3.33 * 2 < MAX_VALUE_BITS  # one product of two long numbers fits


@st.composite
def hostile_arithmetic(draw):
    """Arithmetic a policy could write: long chains, deep nesting, huge numbers, stray signs and '='."""
    atoms = st.one_of(
        st.integers(0, 10**6).map(str),
        st.integers(1, 400).map(lambda n: "9" * n),
        st.sampled_from(["½", "3/4", "3 1/2", "$1,000", "50%", ".5", "0", "1e5", "7x", "x", "2^3"]),
    )
    parts = []
    for _ in range(draw(st.integers(1, 60))):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            parts.append("(" * draw(st.integers(1, 80)))
        elif kind == 1:
            parts.append(")" * draw(st.integers(1, 80)))
        elif kind == 2:
            parts.append(
                draw(st.sampled_from(["+", "-", "*", "/", "//", "×", "÷", "=", "−", " = "]))
                * draw(st.integers(1, 3))
            )
        else:
            parts.append(draw(atoms))
    return " ".join(parts) if draw(st.booleans()) else "".join(parts)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(st.text(max_size=300), hostile_arithmetic()), min_size=1, max_size=4),
    st.one_of(st.none(), st.text(max_size=40)),
)
def test_any_text_is_scored_without_raising(steps, final_answer):
    verifier = ArithmeticVerifier()
    verdicts = verifier.score_steps(steps, final_answer)
    assert len(verdicts) == len(steps)
    for verdict in verdicts:
        assert 0.0 <= verdict.score() <= 1.0 and verdict.unparsed >= 0
        assert verdict.correct is None or 0.0 <= verdict.correct <= 1.0
    scores = verifier(["Q"], [steps])[0]
    assert len(scores) == len(steps) and all(0.0 <= s <= 1.0 for s in scores)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_evaluates_or_is_none(text):
    value = evaluate_text(text)
    assert value is None or isinstance(value, Fraction)
