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
        ("£18", 18),
        ("€1,250.50", Fraction(2501, 2)),
        ("-¥3", -3),
        ("₹ 40", 40),
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


@pytest.mark.parametrize(
    "text", ["", "two", "£", "£$3", "3£", "3 4", "1/0", "9" * (MAX_NUMBER_DIGITS + 1), "1." + "0" * 5000]
)
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


def test_one_number_grammar_for_answers_step_text_and_the_benchmarks(monkeypatch):
    """The step tokenizer, the answers and the benchmarks' rewrites read numbers with psgrpo.rewards.numbers,
    and the rewrites parse expressions with the step verifier's parser (their own builder, no parser of their own)."""
    import importlib.util
    import sys
    from pathlib import Path

    from psgrpo.ps.scorers import expressions
    from psgrpo.rewards import numbers

    assert expressions.NUMBER_PATTERN is numbers.NUMBER_PATTERN
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "scorers" / "gsm8k_expressions.py"
    spec = importlib.util.spec_from_file_location("gsm8k_expressions_grammar", path)
    bench = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # (its dataclasses look it up)
    spec.loader.exec_module(bench)
    assert bench.NUMBER is numbers.DECIMAL_PATTERN
    for text, value in (("1,000", 1000), (".5", Fraction(1, 2)), ("2.25", Fraction(9, 4))):
        assert numbers.parse_number(text) == bench.number_value(text) == numbers.decimal_value(text) == value
    assert numbers.decimal_value("1½") == Fraction(3, 2) and numbers.decimal_value("350 000") == 350000
    assert not [name for name in vars(bench) if "parser" in name.lower() or "tokenize" in name.lower()]
    written = {
        "12/3/4 + 5%": "12/3/4 + 5%",
        "$20/hour * 35 hours/week": "$20 * 35",
        "3 x (2 − .5)": "3 x (2 − .5)",
    }
    values = {text: expressions.evaluate_text(bare) for text, bare in written.items()}
    assert None not in values.values()
    builders, parse_expression = [], expressions.parse_expression

    def spy(tokens, budget=None, *, builder=expressions.EXPR_BUILDER):
        builders.append(builder)
        return parse_expression(tokens, budget, builder=builder)

    monkeypatch.setattr(expressions, "parse_expression", spy)
    assert {text: bench.evaluate(bench.parse_math(text)) for text in written} == values
    assert len(builders) == 3 and expressions.EXPR_BUILDER not in builders
