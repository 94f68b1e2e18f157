"""psgrpo.ps.scorers.equations: which equations a step states, their verdicts, and no-op (pass-through) equations."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.ps.scorers.equations import Equation, extract_equations, extract_step, plain_step
from psgrpo.ps.scorers.latex import strip_markdown


def holds(text: str) -> list[bool]:
    """The verdicts of the equations found in ``text``, in order."""
    return [eq.holds for eq in extract_equations(text)]


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


@pytest.mark.parametrize("sign", ["$", "£", "€", "¥", "₹"])
def test_every_currency_sign_is_read_as_part_of_its_amount(sign):
    """A false equation in pounds or euros is as false as one in dollars (before, ``3 × €4 = €13`` was unread)."""
    assert holds(f"She pays 3 × {sign}4 = {sign}12.") == [True]
    assert holds(f"She pays 3 × {sign}4 = {sign}13.") == [False]
    assert holds(
        f"It costs {sign}1,000 + {sign}250.50 = {sign}1,250.50; {sign}350 000 / 2 = {sign}175 000"
    ) == [
        True,
        True,
    ]
    assert holds(f"The price falls by {sign}-5 + 2 = -3") == [True]  # a sign before a negative amount
    assert holds(f"It costs {sign}05 + 1 = 6") == []  # a leading zero is a code, never read


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
        "2x - 5 = 15",  # algebra, not 2 × (−5)
        "3x - 4 = 8",
        "so x - 6 + 3 = 5",
        "Solve 9x=360 for x.",
        "pages x 1/3 = 5 pages",  # an operand in words: not the claim 1/3 = 5
        "The answer is 12.",
    ],
)
def test_text_without_arithmetic_has_no_equation(text):
    assert extract_equations(text) == []


def test_operator_x_only_between_numbers():
    assert holds("3 x 4 = 12") == [True]
    assert extract_equations("x + 4 = 12") == []


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


def test_a_long_expression_within_the_limits_is_still_judged():
    terms = 60  # 119 tokens, under MAX_EXPRESSION_TOKENS
    assert holds("+".join(["1"] * terms) + f" = {terms}") == [True]
    assert holds("(" * 30 + "2" + ")" * 30 + " * 3 = 6") == [True]
    assert (
        holds(" * ".join(["99"] * 100) + f" = {99**100}") == []
    )  # the right side has 200 digits: not checkable


@pytest.mark.parametrize(
    ("text", "lhs", "holds"),
    [
        ("The temperature rose to - 6 + 3 = -3 degrees.", "- 6 + 3", True),
        ("It was - 6 + 3 = 3", "- 6 + 3", False),
    ],
)
def test_a_spaced_minus_after_to_or_is_is_a_negative_number(text, lhs, holds):
    """``rose to - 6 + 3 = -3``: the minus is the sign of 6 (after ``x - 6`` it would be an operator)."""
    (equation,) = extract_equations(text)
    assert (equation.lhs_text, equation.holds) == (lhs, holds)


@pytest.mark.parametrize("text", ["The totals were\n- 12 + 8 = 20 apples", "We have to\n- 12 + 8 = 20"])
def test_a_bullet_after_to_or_is_is_no_sign_but_a_bullet(text):
    """A bullet opening a line is Markdown, blanked before reading: ``12 + 8 = 20``, not ``-12 + 8``."""
    assert [(eq.lhs_text, eq.holds) for eq in extract_equations(text)] == [("12 + 8", True)]


def test_a_dash_after_is_is_no_sign():
    assert extract_equations("Money left is – 12 + 8 = 20") == []


@pytest.mark.parametrize(
    ("text", "lhs", "rhs"),
    [
        ("**Step 2:** 9 + 2 = 11", "9 + 2", "11"),  # a chat model's bold label
        ("Step 2: **9 + 2 = 11**", "9 + 2", "11"),
        ("9 + 2 = **11**", "9 + 2", "11"),
        ("**Apples:** 9 + 2 = 11", "9 + 2", "11"),
        ("- 9 + 2 = 11", "9 + 2", "11"),  # bullets
        ("* 9 + 2 = 11", "9 + 2", "11"),
        ("  • 9 + 2 = 11 apples", "9 + 2", "11"),
        ("   - Total eggs used: \\( 3 + 4 = 7 \\)", "3 + 4", "7"),  # Qwen's bullet and inline LaTeX
        ("- \\( 3 + 4 = 7 \\)", "3 + 4", "7"),
        ("2**10 = 1024", "2**10", "1024"),  # ** between operands stays a power
        ("2 ** 10 = 1024", "2 ** 10", "1024"),
        ("(2 + 3)**2 = 25", "(2 + 3)**2", "25"),
    ],
)
def test_markdown_around_arithmetic_is_read_through(text, lhs, rhs):
    """Bold read as ``**`` (a power) and a bullet as a binary ``-`` left the equation unread: neutral."""
    [eq] = extract_equations(text)
    assert (eq.lhs_text, eq.rhs_text, eq.holds) == (lhs, rhs, True)


def test_markdown_keeps_positions():
    text = "**Step 1:** 7 + 5 = 12\n- 12 - 3 = 9"
    assert len(strip_markdown(text)) == len(text) and strip_markdown("a_b **c**") == "a_b   c  "
    assert strip_markdown("2**10 and __x__") == "2**10 and   x  "


# --------------------------------------------------------------------------- garbled equations


@pytest.mark.parametrize(
    ("text", "lhs", "rhs"),
    [
        ("Step 5: 9 2 1 = 8", "9 2 1", 8),  # what a drifting ps-ref-bin policy wrote (docs/learning.md)
        ("Step 6: 8 2 7 = 1\n<answer>1</answer>", "8 2 7", 1),
        ("so 12 3 = 4 apples", "12 3", 4),
        ("$\\( 9 \\; 2 = 7 \\)$", "9 2", 7),  # in LaTeX: read as its plain form
        ("Step 5: 9 - 2 1 = 6", "9 - 2 1", 6),  # one operator kept, one missing
        ("Step 5: (8 7) = 2 cars", "(8 7)", 2),
        ("Step 5: 8 * (2 7) = 9", "8 * (2 7)", 9),
        ("Step 5: <<9 2 1=8>>8 eggs", "9 2 1", 8),  # in a calculator annotation
        ("Then 7 8 = 15", "7 8", 15),
        ("Step 2: $15 2 $7 = $8", "$15 2 $7", 8),  # money, commas, decimals and percentages too
        ("Step 2: $15 - 2 $7 = $8", "$15 - 2 $7", 8),
        ("Step 2: 1,500 2 700 = 800", "1,500 2 700", 800),
        ("Step 2: 2.5 100 = 250", "2.5 100", 250),  # not thousands: the first group has a decimal point
        ("Step 2: 15% 2 7% = 8%", "15% 2 7%", 8),
        ("Step 2: 7 + 1 = 8\nStep 3: 8 2 2 = 16", "8 2 2", 16),  # the left side is on the = line
        ("Step 2: 4 + 8 8 12", "4 + 8 8", 12),  # the = written as a digit (docs/learning.md)
        ("Step 4: 14 * 2 8 38", "14 * 2 8", 38),  # a wrong step hidden that way: 14 * 2 is 28
        ("Step 4: (24 - 1) 8 23", "(24 - 1) 8", 23),
    ],
)
def test_numbers_with_the_operators_missing_are_a_false_equation(text, lhs, rhs):
    step = extract_step(text)
    eq = step.equations[-1]
    assert all(e.holds for e in step.equations[:-1])
    assert eq.lhs_text.split() == lhs.split()  # LaTeX spacing commands become spaces
    assert (eq.rhs_value, eq.holds, eq.garbled, eq.lhs_value) == (Fraction(rhs), False, True, None)
    assert step.results[-1][1] == Fraction(rhs)  # it states its right side, as a false equation does


@pytest.mark.parametrize(
    "text",
    [
        "3 1/2 + 1 = 4.5",  # a mixed number is one number
        "It costs $1 000 = $1000",  # thousands apart by a space: one number
        "Step 3: 7 + 5 = 12",  # the step marker's number is a label
        "1. 7 + 5 = 12",
        "5 3 + 2 = 7",  # an equation is read across the = (3 + 2 = 7, false)
        "She has 12 3 = pens",  # no number on the right
        "Scores 9 2 1, total 12",  # no =
        "x = 5",
        "he can park 16,0000/10=16000 cars",  # glued numbers (GSM8K gold typos): unread, as before
        "exit A is 30/100%1000 = 300 students.",
        "Step 1: 1 ½ = 1.5",  # a mixed number with a vulgar fraction
        "12 345 = 12345",  # thousands in groups of three
        "3 4 = 12x",  # algebra on the right
        "Total: 9\n2 = 7",  # numbers on two lines
        "Total: 9 -\n2 = 7",
        "2 (3 + 4) = 14",  # a number beside a parenthesis multiplies
        "3 1/2 * 2 = 7",
        "1 000 + 5 = 1005",  # thousands in groups, beside an operator
        "3 + 4 = 7 8 cars",  # a number after the result, no = after it
        "<<1 000=1000>>1000",
        "<<3*4=12>>12",
        "11 600.50 - 8 800.50 = 2800",  # thousands in groups, with decimals (a review)
        "Average = (1 234.50 + 765.50) / 2 = 1 000",
        "<<(1 234.50+765.50)/2=1000>>1000",
        "9 2\n= 7",  # the = on the next line
        "Step 2: 4 8 8 12",  # numbers and no operator: a list, not an equation
        "Step 1: 3 + 1 000",  # thousands in groups
        "Step 3: 4 + 8\n8 12",  # on two lines
        "Step 2: 4 + 8 8 12x",  # algebra
        "Step 2: 4 + 8 = 12 5 6",  # an equation is read on the line
        "  345\n+ 278\n-----\n  623",  # column arithmetic (raised before a review)
        "1 + 2 + 3 +\n6",
        "3 \\times 4 & 12 & 12 \\\\",  # table cells and LaTeX spacing: wider gaps than a garble's
        "\\[ 3 \\times 4 \\qquad 12 \\qquad 5 \\]",
        "cost: $3 \\times 4$ $12$ 2 bags",
        "3 × 4          12        12",
    ],
)
def test_readable_text_is_never_garbled(text):
    assert not any(eq.garbled for eq in extract_step(text).equations)


@settings(max_examples=100, deadline=None)
@given(
    numbers=st.lists(st.integers(0, 99), min_size=3, max_size=6),
    ops=st.lists(st.sampled_from(["+", "-", "*", "x", "/"]), min_size=5, max_size=5),
    result=st.integers(0, 9999),
)
def test_an_expression_missing_its_last_operator_is_garbled_and_a_whole_one_never_is(numbers, ops, result):
    whole = " ".join(f"{n} {op}" for n, op in zip(numbers[:-1], ops, strict=False)) + f" {numbers[-1]}"
    garbled = whole[: whole.rindex(" ", 0, whole.rindex(" "))] + f" {numbers[-1]}"  # 9 - 2 * 1 -> 9 - 2 1
    assert not any(eq.garbled for eq in extract_step(f"Step 2: {whole} = {result}").equations)
    [eq] = extract_step(f"Step 2: {garbled} = {result} apples").equations
    assert (eq.lhs_text, eq.rhs_value, eq.holds, eq.garbled) == (garbled, result, False, True)


def test_a_garbled_equation_beside_a_readable_one_leaves_its_verdict_alone():
    step = extract_step("Step 2: 9 2 1 = 8, then 8 + 1 = 9")
    assert [(eq.lhs_text, eq.holds, eq.garbled) for eq in step.equations] == [
        ("9 2 1", False, True),
        ("8 + 1", True, False),
    ]


def test_step_markers_are_labels_on_every_line_and_positions_are_kept():
    text = "**Step 2:** 3 + 4 = 7\n2. 5 apples\n  3) 6 pears"
    plain = plain_step(text)
    assert len(plain) == len(text) and plain.split() == ["3", "+", "4", "=", "7", "5", "apples", "6", "pears"]
    assert extract_step(text).operands == [3, 4, 5, 6]  # the markers' 2, 2 and 3 are not numbers of the step


@pytest.mark.parametrize(
    ("text", "verdicts"),
    [  # readings a review found false on correct text (before: a false equation each)
        ("3 × 4 = 12\n(12 + 1) × 2 = 26", [True, True]),  # a new line is no product: not 12 × (12 + 1)
        ("12 + 4 = 16\n16 * 2 = 32", [True, True]),
        ("\\[ 3 \\times 4 = 12 \\]\n\\[ (12 + 1) \\times 2 = 26 \\]", [True, True]),
        ("\\[\n100\n- 20\n- 30 = 50\n\\]", [True]),  # an operator at a line break continues the expression
        ("(2) 3 + 4 = 7", [True]),  # a list marker, not (2) × 3
        ("1 234.50 + 100 = 1 334.50", []),  # thousands in groups are not cut into 234.50 + 100 = 1
        ("So 17 000/5 = 3 400.", []),  # a GSM8K gold line, read as 17 000/5 = 3 before
        ("It is 3 100 + 200 = 300", []),  # 3 100 may be 3100: unread, not judged
        # a second review: each read false or went unread on the first fix
        ("$$\n(12 + 3)\n(4 + 1) = 75\n$$", []),  # a product across lines: not (4 + 1) = 75
        ("2\n(3 + 4) = 14", []),
        ("\\[ 1000 \\\\ (1 + 0.05)^2 = 1102.5 \\]", []),  # \\ is a line break
        ("\\[ 3 \\times 4 = 12 \\\\ (12 + 1) \\times 2 = 26 \\]", [True, True]),
        ("\\begin{aligned} 12 \\times 4 &= 48 \\\\ 48 - 5 &= 43 \\end{aligned}", [True, True]),
        ("\\[ 100 \\\\ - 20 = 80 \\]", [True]),
        ("(25) + 5 = 30", [True]),  # (25) before an operator is an operand, not a list marker
        ("(5) (2) + 3 = 13", []),  # (N) then (: a marker or a factor, not judged
        ("(2) (3) = 6", []),
        ("(4) (138-2)/2 = 68 inches.", []),  # a third review: GSM8K gold lines after a (k) marker
        ("(2) -30/3 = -10 degrees", [True]),  # a marker before a signed number
        ("(1) \n3 + 4 = 7", [True]),
        ("each step (3)(4 + 1) = 15", [True]),  # step (3) before ( is no marker
        ("In the first step (2) + 3 = 5", [True]),
        ("600 x 30 = 18\u00a0000 watts", []),  # a no-break space groups thousands too
        ("-48 + 21 + (-3) = -30\n-30/3 = -10 degrees", [True, True]),  # a gold solution as one step
        ("\\begin{aligned} 20 - 25 &= -5 \\\\ -5 + 10 &= 5 \\end{aligned}", [True, True]),
        ("100\n-20 = 80", [True]),  # no = on the line before: it goes on
        ("(2)\n3 + 4 = 7", [True]),
        ("Step (2) 3 + 4 = 7", [True]),
        ("\\( 5 \\times 24 = 120 \\) \\( 120 + 30 = 150 \\)", [True, True]),  # not the number 120 120
        ("\\[ 5 \\times 24 = 120 \\qquad 120 + 30 = 150 \\]", [True, True]),
        ("he uses 600 x 30 = 18 000 watts.", []),  # GSM8K gold lines: 000 is no number to the reader
        ("250 x 12 = 3 000 grams.", []),
        ("receive 650 000/2 = 325 000 cars each.", []),  # not the mixed number 650 0/2
        ("1 1/2 + 1 = 2.5", [True]),
    ],
)
def test_line_breaks_list_markers_and_grouped_thousands(text: str, verdicts: list[bool]):
    assert holds(text) == verdicts
