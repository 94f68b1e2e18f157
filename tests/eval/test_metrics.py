"""pass@k, step checks, error types and the summary, against hand-computed values."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.eval.metrics import (
    ERROR_TYPES,
    StepCheck,
    check_pass_k,
    check_steps,
    classify_error,
    grade_completion,
    pass_at_k,
    summarize,
)
from psgrpo.ps.segmentation import get_segmenter

# --------------------------------------------------------------------------- crafted completions
# The question: 7 pens, buy 5, give away 3 → gold 9 (arith format); GSM8K: 48 + 48/2 = 72.

ARITH_CORRECT = "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9\n</reasoning>\n<answer>9</answer>"
ARITH_CALCULATION = "<reasoning>\nStep 1: 7 + 5 = 13\nStep 2: 13 - 3 = 10\n</reasoning>\n<answer>10</answer>"
ARITH_LOGIC = "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 + 3 = 15\n</reasoning>\n<answer>15</answer>"
ARITH_FORMAT = "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9\n</reasoning>\n"  # cut before the answer
ARITH_FORMAT_BAD_MATH = "<reasoning>\nStep 1: 7 + 5 = 13\nStep 2: 13 - 3 = 10"
ARITH_PROSE = "<reasoning>\nI think it is about ten.\n</reasoning>\n<answer>10</answer>"

GSM8K_CORRECT = "She sold 48/2 = <<48/2=24>>24 clips in May.\nShe sold 48+24 = <<48+24=72>>72 clips.\n#### 72"
GSM8K_CALCULATION = (
    "She sold 48/2 = <<48/2=24>>24 clips in May.\nShe sold 48+24 = <<48+24=62>>62 clips.\n#### 62"
)
GSM8K_LOGIC = (
    "She sold 48*2 = <<48*2=96>>96 clips in May.\nShe sold 48+96 = <<48+96=144>>144 clips.\n#### 144"
)

# --------------------------------------------------------------------------- pass@k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),  # pass@1 = c / n
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (4, 1, 2, 1 - 3 / 6),  # 1 - C(3,2)/C(4,2)
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (3, 0, 2, 0.0),  # nothing correct
        (3, 2, 2, 1.0),  # n - c = 1 < k: every pair holds a correct sample
        (1, 1, 1, 1.0),
    ],
)
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def _pass_at_k_by_enumeration(n: int, c: int, k: int) -> Fraction:
    """The share of all k-subsets of n samples (the first c correct) holding a correct one."""
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(any(i < c for i in subset) for subset in subsets), len(subsets))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_equals_brute_force_enumeration(nck):
    n, c, k = nck
    assert pass_at_k(n, c, k) == pytest.approx(float(_pass_at_k_by_enumeration(n, c, k)), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3000).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_stable_for_large_n(nck):
    n, c, k = nck
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    value = pass_at_k(n, c, k)
    assert 0.0 <= value <= 1.0 and value == pytest.approx(float(exact), rel=1e-9, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(2, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 1), st.integers(1, n - 1)))
)
def test_pass_at_k_grows_with_k_and_c(nck):
    n, c, k = nck
    assert pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k) - 1e-12
    assert pass_at_k(n, c + 1, k) >= pass_at_k(n, c, k) - 1e-12


@pytest.mark.parametrize(
    ("n", "c", "k", "match"),
    [
        (4, 1, 5, "1 <= k <= n"),
        (4, 1, 0, "1 <= k <= n"),
        (4, 5, 1, "between 0 and n"),
        (4, -1, 1, "between 0 and n"),
        (0, 0, 1, "at least one sample"),
        (4, 1, 1.0, "integers"),
        (4, True, 1, "integers"),
    ],
)
def test_pass_at_k_rejects_bad_arguments(n, c, k, match):
    with pytest.raises(ValueError, match=match):
        pass_at_k(n, c, k)


def test_check_pass_k_names_the_fix():
    check_pass_k([1, 4], 4)
    with pytest.raises(ValueError, match=r"k=\[8\] needs at least 8 samples.*--num_samples 8"):
        check_pass_k([1, 8], 4)
    with pytest.raises(ValueError, match="positive integers"):
        check_pass_k([0], 4)


# --------------------------------------------------------------------------- steps


def test_check_steps_arith_markers():
    assert check_steps(ARITH_CORRECT).verdicts == (True, True)
    assert check_steps(ARITH_CALCULATION).verdicts == (False, True)  # 13 - 3 = 10 holds by itself


def test_steps_without_arithmetic_are_unchecked():
    steps = check_steps(ARITH_CORRECT, get_segmenter("newline"))
    # <reasoning> | Step 1 | Step 2 | </reasoning> | <answer>9</answer>
    assert steps.verdicts == (None, True, True, None, None)
    assert (steps.n_steps, steps.n_checked, steps.n_verified) == (5, 2, 2) and steps.complete


def test_step_completeness_needs_a_checked_step_and_no_failed_one():
    assert StepCheck((None, True, None)).complete
    assert not StepCheck((True, False)).complete
    assert not StepCheck((None, None)).complete  # no arithmetic: nothing verified
    assert not StepCheck(()).complete
    assert not check_steps(ARITH_PROSE).complete


def test_check_steps_gsm8k_annotations_per_line():
    newline = get_segmenter("newline")
    assert check_steps(GSM8K_CORRECT, newline).verdicts == (True, True, None)
    assert check_steps(GSM8K_CALCULATION, newline).verdicts == (True, False, None)
    assert check_steps(GSM8K_CORRECT).verdicts == (True,)  # no Step markers: one step


# --------------------------------------------------------------------------- error types


@pytest.mark.parametrize(
    ("text", "gold", "expected"),
    [
        (ARITH_CORRECT, "9", "correct"),
        (ARITH_CALCULATION, "9", "calculation"),
        (ARITH_LOGIC, "9", "logic"),
        (ARITH_FORMAT, "9", "format"),
        (ARITH_FORMAT_BAD_MATH, "9", "format"),  # no answer wins over wrong arithmetic
        (ARITH_PROSE, "9", "logic"),  # wrong, and no arithmetic to blame
        (GSM8K_CORRECT, "72", "correct"),
        (GSM8K_CALCULATION, "72", "calculation"),
        (GSM8K_LOGIC, "72", "logic"),
        ("<answer>1,000</answer>", "1000", "correct"),
        ("<answer>99.5</answer>", "100", "logic"),  # close is not correct
        ("<answer>5</answer><answer>9</answer>", "9", "format"),  # two answers: none
    ],
)
def test_error_type_of_crafted_completions(text, gold, expected):
    assert grade_completion(text, gold).error_type == expected


def test_classify_error_precedence():
    failed, fine = StepCheck((False,)), StepCheck((True,))
    assert classify_error("9", True, failed) == "correct"  # right answer despite a slip
    assert classify_error(None, False, failed) == "format"
    assert classify_error("8", False, failed) == "calculation"
    assert classify_error("8", False, fine) == "logic"


def test_grade_completion_fields():
    grade = grade_completion(ARITH_CALCULATION, "9")
    assert (grade.answer, grade.correct, grade.format_ok) == ("10", False, True)
    assert grade.steps.n_checked == 2 and not grade.steps.complete
    assert not grade_completion(GSM8K_CORRECT, "72").format_ok  # no tags


# --------------------------------------------------------------------------- summary


def test_summarize_hand_computed():
    grades = [
        [grade_completion(t, "9") for t in (ARITH_CORRECT, ARITH_CALCULATION, ARITH_CORRECT)],
        [grade_completion(t, "9") for t in (ARITH_LOGIC, ARITH_FORMAT, ARITH_CORRECT)],
    ]
    tokens = [[10, 20, 30], [40, 50, 60]]
    summary = summarize(grades, tokens, pass_k=[1, 2, 3])
    assert summary["accuracy"] == 0.5  # sample 0: right for prompt 0, wrong for prompt 1
    assert summary["pass@1"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert summary["pass@2"] == pytest.approx((1.0 + (1 - 1 / 3)) / 2)  # prompt 1: 1 - C(2,2)/C(3,2)
    assert summary["pass@3"] == 1.0
    assert summary["format_rate"] == 5 / 6 and summary["answer_rate"] == 5 / 6  # ARITH_FORMAT has neither
    assert summary["mean_tokens"] == 35.0 and summary["median_tokens"] == 35.0
    assert summary["step_complete_rate"] == 5 / 6  # all but the calculation slip
    assert summary["step_checked_rate"] == 1.0
    assert [summary[f"error_type/{t}"] for t in ERROR_TYPES] == [3 / 6, 1 / 6, 1 / 6, 1 / 6]
    assert (summary["n"], summary["num_samples"], summary["n_completions"]) == (2.0, 3.0, 6.0)


def test_summarize_rejects_bad_shapes():
    one = grade_completion(ARITH_CORRECT, "9")
    with pytest.raises(ValueError, match="empty"):
        summarize([], [])
    with pytest.raises(ValueError, match="one count per graded sample"):
        summarize([[one, one]], [[1]])
    with pytest.raises(ValueError, match="prompt 1 has no samples"):
        summarize([[one], []], [[1], []])
    with pytest.raises(ValueError, match="needs at least 2 samples"):
        summarize([[one]], [[1]], pass_k=[2])
