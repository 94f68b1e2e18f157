"""benchmarks/_args.py: the benchmarks' numeric flags refuse a bad value with argparse's one line."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def args(import_benchmark):
    return import_benchmark("_args")


@given(value=st.floats(allow_nan=True, allow_infinity=True))
def test_a_number_passes_exactly_when_it_is_at_least_the_minimum(args, value):
    parse = args.at_least(0.5)
    if 0.5 <= value < float("inf"):
        assert parse(repr(value)) == value
    else:  # below the minimum, NaN or infinite
        with pytest.raises(argparse.ArgumentTypeError, match=r"expected a number >= 0\.5"):
            parse(repr(value))


def test_strict_refuses_the_minimum_and_int_refuses_a_fraction(args):
    assert args.POSITIVE_SECONDS("0.1") == 0.1 and args.SECONDS("0") == 0.0 and args.POSITIVE_INT("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected a number > 0, got 0"):
        args.POSITIVE_SECONDS("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected an integer, got '1\.5'"):
        args.POSITIVE_INT("1.5")
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected an integer >= 1, got 0"):
        args.POSITIVE_INT("0")


@pytest.mark.parametrize(
    "script, argv, line",
    [
        ("device_check", ["--budget_s", "0"], "argument --budget_s: expected a number > 0, got 0"),
        ("device_check", ["--budget_s", "inf"], "argument --budget_s: expected a number > 0, got inf"),
        ("device_check", ["--workers", "0"], "argument --workers: expected an integer >= 1, got 0"),
        (
            "device_check",
            ["--tests_timeout_s", "-5"],
            "argument --tests_timeout_s: expected a number > 0, got -5",
        ),
        ("device_check", ["--steps", "two"], "argument --steps: expected an integer, got 'two'"),
        (
            "device_check",
            ["--min_section_s", "-1"],
            "argument --min_section_s: expected a number >= 0, got -1",
        ),
        (
            "device_check",
            ["--generation_reserve_s", "nan"],
            "argument --generation_reserve_s: expected a number >= 0",
        ),
        ("device_check", ["--new_tokens", "0"], "argument --new_tokens: expected an integer >= 1, got 0"),
        ("gpu_check", ["--time_budget_s", "0"], "argument --time_budget_s: expected a number > 0, got 0"),
        ("gpu_check", ["--steps", "0"], "argument --steps: expected an integer >= 1, got 0"),
        ("bench_generation", ["--repeats", "0"], "argument --repeats: expected an integer >= 1, got 0"),
        ("bench_generation", ["--batch", "-32"], "argument --batch: expected an integer >= 1, got -32"),
    ],
)
def test_a_bad_numeric_flag_is_one_line_before_anything_runs(import_benchmark, capsys, script, argv, line):
    module = import_benchmark(script)
    with pytest.raises(SystemExit) as stop:
        module.parse_args(argv)
    assert stop.value.code == 2
    assert line in capsys.readouterr().err.splitlines()[-1]
