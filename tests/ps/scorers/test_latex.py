"""psgrpo.ps.scorers.latex and the equation reader on LaTeX, clock times, scientific notation, number
words and powers: read as plain text is read, or left unread, never misread."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier
from psgrpo.ps.scorers.equations import extract_equations
from psgrpo.ps.scorers.expressions import evaluate_text
from psgrpo.ps.scorers.latex import MAX_GROUP_CHARS, latex_to_text, strip_markdown, to_plain
from psgrpo.ps.scorers.reference import ReferenceVerifier
from psgrpo.ps.scorers.units import result_quantity


def read(text: str) -> list[tuple[Fraction | None, Fraction | None, bool]]:
    """``(lhs value, rhs value, holds)`` of every equation read from ``text``."""
    return [(eq.lhs_value, eq.rhs_value, eq.holds) for eq in extract_equations(text)]


@pytest.mark.parametrize(
    ("text", "lhs", "rhs"),
    [
        (r"So he pays \(3 \times \$68 = \$204\).", 204, 204),
        (r"$\frac{30}{100}\cdot 180 = 54$ students", 54, 54),
        (r"\[ 50 \text{ km/hr} \times 3 \text{ hr} = 150 \text{ km} \]", 150, 150),
        (r"$$ \dfrac{1}{2} \times 30 = 15 $$", 15, 15),
        (r"\(2{,}500 + 500 = 3{,}000\) dollars", 3000, 3000),
        (r"\(1\,200 \div 4 = 300\)", 300, 300),
        (r"\(20\% \text{ of } 80 = 16\)", 16, 16),
        (r"\(10\% \times \$50 = \$5\)", 5, 5),
        (r"\(\tfrac{3}{4} \cdot 24 = 18\)", 18, 18),
        (r"\(\frac{3 + 5}{2} = 4\)", 4, 4),
        (r"\(3^{2} + 1 = 10\)", 10, 10),
        (r"The total is \(\boxed{5 + 3 = 8}\)", 8, 8),
        (r"\(\left(4 + 2\right) \times 3 = 18\)", 18, 18),
        ("2^3 = 8", 8, 8),
        ("2**10 = 1024", 1024, 1024),
        (r"12 \cdot 3 = 36", 36, 36),
        ("12 · 3 = 36", 36, 36),
        ("seven plus two is nine", 9, 9),
        ("twenty-five minus five equals twenty", 20, 20),
    ],
)
def test_latex_powers_and_number_words_are_read_as_plain_text(text: str, lhs: int, rhs: int) -> None:
    assert read(text) == [(Fraction(lhs), Fraction(rhs), True)]


@pytest.mark.parametrize(
    "text",
    [
        r"So he pays \(3 \times \$68 = \$214\).",
        r"$\frac{30}{100}\cdot 180 = 60$",
        "seven plus two is ten",
        "2^3 = 9",
        r"12 \cdot 3 = 38",
    ],
)
def test_a_false_latex_or_word_equation_is_read_and_fails(text: str) -> None:
    [(_, _, holds)] = read(text)
    assert not holds


@pytest.mark.parametrize(
    "text",
    [
        "3:30 pm + 2 hours = 5:30 pm",  # was read as 30 pm + 2 = 5
        "He left at 10:15 + 45 minutes = 11:00",
        "1e3 + 1 = 1001",  # was read as 3 + 1 = 1001
        "2.5e2 * 2 = 500",
        r"\(\sqrt{16} + 1 = 5\)",  # not 16 + 1 = 5
        r"\(\log 8 + 1 = 4\)",
        r"\(4^{1/2} = 2\)",  # a fractional power is not judged
        "2^0.5 = 1.41",
        "2^1000 = 5",  # beyond the exponent limit
        r"\(\frac{\sqrt{4}}{2} + 1 = 2\)",
        r"\(x \approx 3.33\)",
    ],
)
def test_times_scientific_notation_and_functions_are_left_unread_not_misread(text: str) -> None:
    assert read(text) == []


def test_text_without_latex_is_unchanged() -> None:
    text = "She sells 16 - 3 - 4 = 9 eggs at $2 each: 9 * $2 = $18."  # $ before a number: currency
    assert latex_to_text(text) == text
    prose = "She sells 16 - 3 - 4 = 9 eggs."
    assert latex_to_text(prose) is prose


@pytest.mark.parametrize(
    ("latex", "plain"),
    [
        (r"\(3 \times \$68 = \$204\)", "3 * $68 = $204"),
        (r"$\frac{30}{100}\cdot 180 = 54$", "30/100 * 180 = 54"),
        (r"\text{km}", "km"),
        (r"2{,}500", "2,500"),
        (r"90^\circ", "90"),
        (r"\frac{a+1}{2}", "(a+1)/(2)"),
        (r"\boxed{18}", "18"),
    ],
)
def test_latex_to_text_rewrites_into_the_plain_grammar(latex: str, plain: str) -> None:
    assert " ".join(latex_to_text(latex).split()) == plain  # up to spacing


def test_unclosed_and_oversized_groups_are_left_alone() -> None:
    assert extract_equations(r"\(\frac{3}{4 = 1\)") == []
    long_group = r"\text{" + "a" * (MAX_GROUP_CHARS + 10) + "} 2 + 2 = 4"
    assert [eq.holds for eq in extract_equations(long_group)] == [True]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("\\${}^_()[]=+-*/ 0123456789.,%fractimesdivbx·")), max_size=120))
def test_any_latex_like_text_is_rewritten_and_read_without_raising(text: str) -> None:
    rewritten = latex_to_text(text)
    assert isinstance(rewritten, str)
    assert isinstance(extract_equations(text), list)


_OPS = {"+": ("+", "+"), "-": ("-", "-"), "*": ("*", "\\times"), "/": ("/", "\\div")}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 99), min_size=2, max_size=3),  # below 10^6: an offset of 1 is beyond rel_tol
    st.lists(st.sampled_from(sorted(_OPS)), min_size=4, max_size=4),
    st.integers(-2, 2),
    st.sampled_from(["\\(%s\\)", "$%s$", "\\[ %s \\]", "$$ %s $$"]),
)
def test_a_latex_equation_gets_the_verdict_of_its_plain_form(
    numbers: list[int], ops: list[str], offset: int, delimiters: str
) -> None:
    plain_lhs = " ".join(f"{n} {_OPS[o][0]}" for n, o in zip(numbers, ops, strict=False)).rsplit(" ", 1)[0]
    latex_lhs = " ".join(f"{n} {_OPS[o][1]}" for n, o in zip(numbers, ops, strict=False)).rsplit(" ", 1)[0]
    value = evaluate_text(plain_lhs)
    if value is None or value.denominator != 1:
        return
    result = value + offset
    plain = read(f"{plain_lhs} = {result}")
    latex = read("So " + delimiters % f"{latex_lhs} = {result}" + " in all.")
    assert latex == plain
    assert [holds for _, _, holds in latex] == [offset == 0]


def test_scorers_score_a_latex_solution_as_its_plain_form() -> None:
    plain = [
        "She has 16 - 3 - 4 = 9 eggs left.",
        "She sells them: 9 * $2 = $18.",
        "She makes 18 + 1 = 20.\n#### 20",
    ]
    latex = [
        r"She has \(16 - 3 - 4 = 9\) eggs left.",
        r"She sells them: $9 \times \$2 = \$18$.",
        r"She makes \[ 18 + 1 = 20 \] The answer is \(\boxed{20}\).",
    ]
    gold = {"solution": ["16 - 3 - 4 = <<16-3-4=9>>9\n9 * 2 = <<9*2=18>>18\n#### 18"], "answer": ["18"]}
    for scorer in (ArithmeticVerifier(), ReferenceVerifier(correct_weight=0.0, reference_weight=1.0)):
        kwargs = gold if isinstance(scorer, ReferenceVerifier) else {}
        assert scorer(["q"], [latex], **kwargs) == scorer(["q"], [plain], **kwargs)
    assert ReferenceVerifier(0.0, 1.0)(["q"], [latex], **gold) == [[1.0, 1.0, 0.0]]


# --------------------------------------------------------------------------- Markdown


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 99), min_size=2, max_size=3),
    st.lists(st.sampled_from(["+", "-", "*", "/"]), min_size=4, max_size=4),
    st.integers(-2, 2),
    st.sampled_from(
        [
            "**Step 2:** %s",  # a chat model's bold label
            "Step 2: **%s**",  # the equation in bold
            "Step 2: the total\n- %s",  # a bullet line
            "Step 2:\n  * %s apples",
            "Step 2: • %s",
            "**Total:** %s",
            "- \\(%s\\)",  # a bullet and inline LaTeX, as Qwen writes them
            "*Step 2:* %s",  # an italic label
            "Step 2: *%s*",
            "Eggs left:\n– %s",  # an en-dash bullet
        ]
    ),
    st.booleans(),
)
def test_an_equation_in_markdown_gets_the_verdict_of_its_plain_form(
    numbers: list[int], ops: list[str], offset: int, layout: str, bold_result: bool
) -> None:
    lhs = " ".join(f"{n} {o}" for n, o in zip(numbers, ops, strict=False)).rsplit(" ", 1)[0]
    value = evaluate_text(lhs)
    if value is None or value.denominator != 1:
        return
    result = value + offset
    marked = "*%s*" in layout or "\\(" in layout  # the result is already inside a mark
    rhs = f"**{result}**" if bold_result and not marked else f"{result}"
    assert read(layout % f"{lhs} = {rhs}") == read(f"{lhs} = {result}")


def test_markdown_is_blanked_and_powers_stay() -> None:
    text = "**Step 1:** 7 + 5 = **12**\n- 12 - 3 = 9\n* 2**3 = 8, 2 ** -1 = 0.5"
    plain = strip_markdown(text)
    assert len(plain) == len(text) and "2**3" in plain and "2 ** -1" in plain
    assert "**" not in plain.replace("2**3", "").replace("2 ** -1", "")
    assert to_plain("**\\(3 \\times 4 = 12\\)**") == strip_markdown(
        latex_to_text("**\\(3 \\times 4 = 12\\)**")
    )


def test_units_and_the_reference_verifier_read_through_markdown() -> None:
    assert result_quantity("Step 1: 3 * 5 = **15** hours.") == result_quantity("Step 1: 3 * 5 = 15 hours.")
    gold = "Step 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9"
    steps = ["**Step 1:** 7 + 5 = **12** pens", "**Step 2:**\n- 12 + 3 = **15** pens", "<answer>15</answer>"]
    plain = ["Step 1: 7 + 5 = 12 pens", "Step 2: 12 + 3 = 15 pens", "<answer>15</answer>"]
    verifier = ReferenceVerifier(correct_weight=0.0, reference_weight=1.0)
    scores = verifier(["q", "q"], [steps, plain], solution=[gold] * 2, answer=["9"] * 2)
    assert scores[0] == scores[1] and scores[0][:2] == [1.0, 0.0]  # the markdown step is judged, not neutral


@pytest.mark.parametrize(
    ("latex", "lhs"),
    [
        (r"\(1\frac{1}{2} = 1.5\)", "1 1/2"),  # was read as 11/2 = 1.5: a false equation
        (r"\(2\tfrac{3}{4} + 1 = 3.75\)", "2 3/4 + 1"),
        (r"\(12\frac12 = 12.5\)", "12 1/2"),
        (r"\(2 \times 3\frac{1}{2} = 7\)", "2  *  3 1/2"),
    ],
)
def test_a_digit_then_a_fraction_is_a_mixed_number(latex: str, lhs: str) -> None:
    [eq] = extract_equations(latex)
    assert (" ".join(eq.lhs_text.split()), eq.holds) == (" ".join(lhs.split()), True)


@pytest.mark.parametrize(
    ("text", "verdicts"),
    [
        ("12 * 4 = **48** 48 eggs", [True]),  # bold beside a number is bold, not a power
        ("**12 * 4 = 48** 5 left", [True]),
        ("12 * 4 = 48 **48**", [True]),
        ("3 + 4 = ***7***", [True]),  # bold italic
        ("***Step 1:*** 3 + 4 = 7", [True]),
        ("2 ** -1 = 0.5", [True]),  # a spaced power with a negative exponent
        ("3 - 2 ** -1 = 2.5", [True]),
        ("2**3**2 = 512", [True]),
        ("\\[\n3 \\times 4\n\\times 2 = 24\n\\]", [True]),  # display math: a line opening with an operator
        ("\\[\n100\n- 20\n- 30 = 50\n\\]", [True]),
        ("$$\n12 + 5\n+ 3 = 20\n$$", [True]),
        (
            "\\begin{aligned} 12 \\times 4 &= 48 \\\\ 48 - 5 &= 43 \\end{aligned}",
            [True, True],
        ),  # & is a column
        ("\\(\\frac{1}{2}\\frac{1}{3} = \\frac{1}{6}\\)", [True]),  # side by side after a fraction: a product
        ("\\(0.5\\frac{1}{2} = 0.25\\)", [True]),
        ("\\(1\\!\\frac12 = 1.5\\)", [True]),  # a mixed number past a spacing command
        ("3 + 4 = *7*", [True]),  # italics
        ("*Step 1:* 3 + 4 = 7 *apples*", [True]),
        ("3 *4* 5 = 60", [True]),  # between two operands the stars multiply
        ("(2 + 3) *4* 2 = 40", [True]),
        ("2*3*4 = 24", [True]),
        ("She has *7* pens; 3 + 4 = *8*", [False]),
        ("– 16 - 3 = 13", [True]),  # an en-dash bullet
    ],
)
def test_markdown_and_latex_edge_forms_a_review_found(text: str, verdicts: list[bool]) -> None:
    assert [holds for _, _, holds in read(text)] == verdicts


@pytest.mark.parametrize(
    ("latex", "fenced"),
    [
        (r"\( \lfloor 17 / 5 \rfloor = 3 \)", "floor⟦17 / 5⟧"),  # was lfloor⟦1⟧ 7 / 5: 7/5 = 3, false
        (r"\(\left\lceil 2.5 \right\rceil = 3\)", "ceil⟦2.5⟧"),
        (r"\(\log 100 = 2\)", "log⟦100⟧"),  # the whole number is the argument, not its first digit
        (r"\(\sqrt 1,024 = 32\)", "sqrt⟦1,024⟧"),
        (r"\( \lfloor 17 / 5 = 3 \)", "floor⟦17⟧"),  # unclosed: its number, as a function's
        (r"\( \log_2 8 = 3 \)", "log⟦_2 8⟧"),  # the base belongs to the function: not 2 8 = 3
        (r"\(\log_{10}(1000) = 3\)", "log⟦_{10}(1000)⟧"),
        (r"\(\sqrt 16, 25\)", "sqrt⟦16⟧"),
        (r"\(\log\left(10 \times 10\right) = 2\)", "log⟦\\left(10 \\times 10\\right)⟧"),
        (r"\(\sqrt[3]{27} + 1 = 4\)", "sqrt⟦[3]27⟧"),  # was 27 + 1 = 4
        (r"\(\binom{5}{2} + 1 = 11\)", "binom⟦5 2⟧"),  # was 2 + 1 = 11
        (r"\( 600 \times 30 = 18~000 \)", ""),  # ~ is a space: 18 000, unread, not 18
    ],
)
def test_floor_ceiling_and_functions_of_a_number_are_fenced_whole(latex: str, fenced: str) -> None:
    assert fenced in latex_to_text(latex) and extract_equations(latex) == []
