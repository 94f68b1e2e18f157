"""psgrpo.ps.scorers.expressions: exact evaluation, numbers as written, and the limits that bound the work."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.ps.scorers.arithmetic import score_steps
from psgrpo.ps.scorers.expressions import (
    MAX_EXPRESSION_TOKENS,
    MAX_LITERAL_DIGITS,
    MAX_NESTING,
    MAX_VALUE_BITS,
    evaluate_text,
    written_numbers,
)

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


# --------------------------------------------------------------------------- bounded work


def test_values_beyond_the_size_limit_are_not_checkable():
    big = " * ".join(["9999999999"] * 40)  # about 1,330 bits
    [verdict] = score_steps([f"{big} = 1"], None)
    assert verdict.equations == [] and verdict.unparsed == 1
    assert evaluate_text(big) is None


def test_budget_limits_are_finite_and_consistent():
    assert MAX_EXPRESSION_TOKENS < 1000 and MAX_NESTING * 4 < 500  # far from Python's recursion limit
    assert MAX_LITERAL_DIGITS * 3.33 * 2 < MAX_VALUE_BITS  # one product of two long numbers fits


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_evaluates_or_is_none(text):
    value = evaluate_text(text)
    assert value is None or isinstance(value, Fraction)


# --------------------------------------------------------------------------- partial values


@pytest.mark.parametrize(
    ("text", "included", "excluded"),
    [
        ("16 - 3 - 4", {7, 12, 13}, {3, 16, 9 * 2}),  # 3 + 4 = 7 eggs used, then 16 - 7
        ("2 * (16 - 3 - 4)", {7, 12, 13, 18}, {32}),
        ("60 / 3 / 4", {12, 20, 15}, {60}),  # 3 * 4 = 12 first, then 60 / 12
        ("5 + 6", {11}, {5, 6}),
    ],
)
def test_partial_values_are_the_sub_combinations_of_a_chain(text, included, excluded):
    from psgrpo.ps.scorers.expressions import parse_expression, partial_values, tokenize

    values = partial_values(parse_expression(tokenize(text)))
    assert {Fraction(v) for v in included} <= values
    assert not {Fraction(v) for v in excluded} & values


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=2, max_size=12))
def test_partial_values_of_a_sum_hold_every_pair_and_stay_bounded(terms):
    from psgrpo.ps.scorers.expressions import MAX_PARTIAL_TERMS, parse_expression, partial_values, tokenize

    values = partial_values(parse_expression(tokenize(" + ".join(map(str, terms)))))
    assert all(Fraction(a + b) in values for i, a in enumerate(terms) for b in terms[i + 1 :])
    assert (Fraction(sum(terms)) in values) == (len(terms) <= MAX_PARTIAL_TERMS)  # a long chain: pairs only
    assert len(values) <= 2 * 2 ** min(len(terms), MAX_PARTIAL_TERMS) + 2 * len(terms) ** 2


# --------------------------------------------------------------------------- builders

F = Fraction


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("16 - 3 - 4", ("-", ("-", F(16), F(3)), F(4))),
        ("12/3/4", ("/", ("/", F(12), F(3)), F(4))),  # a fraction token, then a division
        ("3 1/2 * 2", ("*", ("+", F(3), ("/", F(1), F(2))), F(2))),
        ("3(47)", ("*", F(3), F(47))),
        ("(1/2) 278", ("*", ("/", F(1), F(2)), F(278))),
        ("-2^2", ("neg", ("^", F(2), F(2)))),
        ("+3 x -4", ("*", F(3), ("neg", F(4)))),
        ("$1,000 * 5%", ("*", F(1000), ("%", F(5)))),
        ("7 // (2)", ("//", F(7), F(2))),
    ],
)
def test_the_default_builder_makes_expr_tuples(text, tree):
    from psgrpo.ps.scorers.expressions import EXPR_BUILDER, parse_expression, tokenize

    assert parse_expression(tokenize(text)) == tree == parse_expression(tokenize(text), builder=EXPR_BUILDER)


class _Parenthesised:
    """A builder that writes the parse back as text, each operation and number in parentheses."""

    def leaf(self, token):
        from psgrpo.ps.scorers.expressions import parse_literal

        return None if parse_literal(token.text) is None else f"({token.text})"

    def binary(self, op, token, left, right):
        return f"({left} {op} {right})"

    def sign(self, op, operand, token):
        return f"({op}{operand})"

    def group(self, inner):
        return inner


FRAGMENTS = ["1", "12", ".5", "3/4", "2 1/2", "5/2", "50%", "$5", "½", " ", "+", "-", "−", "*", "x", "×", "/",
             "÷", "//", "^", "**", "(", ")", "a"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join))
def test_another_builder_sees_the_same_parse(text):
    """The hooks are called on the parse the default builder makes: the text a writing builder makes
    of it parses back to the default's tree (and neither parses what the other does not)."""
    from psgrpo.ps.scorers.expressions import parse_expression, tokenize

    tokens = tokenize(text)
    tree, written = parse_expression(tokens), parse_expression(tokens, builder=_Parenthesised())
    assert (written is None) == (tree is None)
    assert written is None or parse_expression(tokenize(written)) == tree


def test_a_builder_gets_operators_as_written_and_may_refuse():
    from psgrpo.ps.scorers.expressions import ExprBuilder, parse_expression, tokenize

    class NoPowers(ExprBuilder):
        def __init__(self):
            self.seen = []

        def binary(self, op, token, left, right):
            self.seen.append((op, token and token.text))
            return None if op == "^" else super().binary(op, token, left, right)

    builder = NoPowers()
    assert parse_expression(tokenize("3 × (4 ÷ 2)(5)"), builder=builder) == ("*", ("*", 3, ("/", 4, 2)), 5)
    assert builder.seen == [("/", "÷"), ("*", "×"), ("*", None)]  # None: an implicit product
    assert parse_expression(tokenize("2 ^ 3 + 1"), builder=builder) is None


@pytest.mark.parametrize(
    ("gold", "step", "expected"),
    [
        ("16 - 3 - 4", "3 + 4", True),  # the eggs used first, then 16 - 7
        ("16 - 3 - 4", "4 + 3", True),
        ("16 - 3 - 4", "16 - 3", True),
        ("30 + 10 + 60 + 20", "30 + 60", True),
        ("30 + 10 + 60 + 20", "60 / 2", False),  # 30 = 10 + 20 by chance, reached by a division
        ("30 + 10 + 60 + 20", "15 * 2", False),
        ("45 / 100 * 200", "0.45 * 200", True),  # a factor of the chain computed first: 45/100
        ("60 / 3 / 4", "3 * 4", True),
        ("60 / 3 / 4", "3 + 9", False),
        ("2 * (16 - 3 - 4)", "3 + 4", True),  # a chain inside a chain
    ],
)
def test_computes_part_needs_the_chains_items_and_operation(gold, step, expected):
    from psgrpo.ps.scorers.expressions import (
        computes_part,
        evaluate,
        parse_expression,
        partial_chains,
        tokenize,
    )

    chains = partial_chains(parse_expression(tokenize(gold)))
    tree = parse_expression(tokenize(step))
    assert computes_part(tree, evaluate(tree), chains) is expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=2, max_size=8))
def test_every_pair_of_a_sum_computes_part_of_it(terms):
    from psgrpo.ps.scorers.expressions import computes_part, parse_expression, partial_chains, tokenize

    chains = partial_chains(parse_expression(tokenize(" + ".join(map(str, terms)))))
    for i, a in enumerate(terms):
        for b in terms[i + 1 :]:
            assert computes_part(("+", Fraction(a), Fraction(b)), Fraction(a + b), chains)
