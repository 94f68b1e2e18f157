"""Tests for psgrpo.eval.first_error: ProcessBench's error_acc / correct_acc / F1, hand-computed and as properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.eval.first_error import f1_interval, first_error_metrics, harmonic_mean


def test_hand_computed_case():
    # 4 wrong solutions: exact (2→2), early (3→1), late (0→2), never (1→-1);
    # 3 correct ones: two unflagged, one blamed at step 0.
    labels = [2, 3, 0, 1, -1, -1, -1]
    predictions = [2, 1, 2, -1, -1, 0, -1]
    m = first_error_metrics(labels, predictions)
    assert (m["rows"], m["wrong_rows"], m["correct_rows"]) == (7, 4, 3)
    assert (m["exact"], m["early"], m["late"], m["never"], m["false_blame"]) == (1, 1, 1, 1, 1)
    assert m["error_acc"] == pytest.approx(1 / 4)
    assert m["correct_acc"] == pytest.approx(2 / 3)
    assert m["flagged_any"] == pytest.approx(3 / 4)
    # F1 = 2ab/(a+b) = 2 · 1/4 · 2/3 / (1/4 + 2/3) = (1/3) / (11/12) = 4/11
    assert m["f1"] == pytest.approx(4 / 11)


def test_correct_solutions_only_leave_error_metrics_undefined():
    m = first_error_metrics([-1, -1, -1, -1], [-1, 3, -1, -1])
    assert m["correct_acc"] == pytest.approx(0.75)
    assert m["error_acc"] is None and m["f1"] is None and m["flagged_any"] is None
    assert m["false_blame"] == 1 and m["wrong_rows"] == 0


def test_wrong_solutions_only_and_empty_input():
    m = first_error_metrics([1, 0], [1, 1])
    assert (m["error_acc"], m["correct_acc"], m["f1"], m["late"]) == (0.5, None, None, 1)
    assert first_error_metrics([], [])["rows"] == 0


def test_f1_is_zero_when_both_accuracies_are():
    m = first_error_metrics([0, -1], [1, 0])
    assert m["error_acc"] == 0 and m["correct_acc"] == 0 and m["f1"] == 0


@pytest.mark.parametrize(
    ("labels", "predictions", "message"),
    [([0], [0, 1], "1 labels but 2 predictions"), ([-2], [0], "label must be"), ([0], [True], "prediction")],
)
def test_bad_input_is_refused(labels, predictions, message):
    with pytest.raises(ValueError, match=message):
        first_error_metrics(labels, predictions)


@st.composite
def labelled(draw):
    n = draw(st.integers(0, 30))
    labels = draw(st.lists(st.integers(-1, 6), min_size=n, max_size=n))
    predictions = draw(st.lists(st.integers(-1, 6), min_size=n, max_size=n))
    return labels, predictions


@given(labelled())
def test_counts_partition_and_f1_lies_between_the_accuracies(pair):
    labels, predictions = pair
    m = first_error_metrics(labels, predictions)
    assert m["exact"] + m["early"] + m["late"] + m["never"] == m["wrong_rows"]
    assert m["wrong_rows"] + m["correct_rows"] == m["rows"] == len(labels)
    if m["f1"] is not None:
        low, high = sorted((m["error_acc"], m["correct_acc"]))
        assert low - 1e-12 <= m["f1"] <= high + 1e-12  # a harmonic mean lies between its terms
    # Perfect predictions score 1 on whatever is defined.
    perfect = first_error_metrics(labels, labels)
    assert all(perfect[k] in (None, 1.0) for k in ("error_acc", "correct_acc", "f1", "flagged_any"))


@given(st.floats(0, 1), st.floats(0, 1))
def test_harmonic_mean_is_symmetric_and_bounded(a, b):
    h = harmonic_mean(a, b)
    assert h == pytest.approx(harmonic_mean(b, a))
    assert min(a, b) - 1e-12 <= h <= max(a, b) + 1e-12


def _counts(exact: int, wrong: int, blamed: int, correct: int) -> dict:
    """Metrics of `wrong` solutions with `exact` found, and `correct` ones with `blamed` flagged."""
    labels = [2] * wrong + [-1] * correct
    predictions = [2] * exact + [-1] * (wrong - exact) + [0] * blamed + [-1] * (correct - blamed)
    return first_error_metrics(labels, predictions)


def test_the_f1_interval_of_the_dev_files_counts_is_about_five_points_either_way():
    m = _counts(exact=107, wrong=156, blamed=31, correct=976)  # the reference scorer on the dev files
    low, high = f1_interval(m)
    assert low < m["f1"] < high
    assert (
        0.74 < low < 0.76 and 0.84 < high < 0.86
    )  # (0.748, 0.849); the stratified bootstrap: (0.750, 0.851)
    assert f1_interval(m) == (low, high)  # seeded
    narrower = f1_interval(m, confidence=0.5)
    assert low < narrower[0] < narrower[1] < high
    big = f1_interval(_counts(exact=1070, wrong=1560, blamed=310, correct=9760))
    assert big[1] - big[0] < (high - low) / 2  # ten times the solutions: about a third of the width


def test_the_f1_interval_is_none_where_f1_is_and_refuses_a_bad_confidence():
    assert f1_interval(first_error_metrics([-1, -1], [-1, 0])) is None  # no wrong solution
    assert f1_interval(first_error_metrics([1, 2], [1, -1])) is None  # no correct solution
    with pytest.raises(ValueError, match="confidence must be in"):
        f1_interval(_counts(1, 2, 0, 2), confidence=95)
    with pytest.raises(ValueError, match="draws must be at least 1"):
        f1_interval(_counts(1, 2, 0, 2), draws=0)


def test_a_perfect_score_on_few_solutions_gets_a_wide_interval_not_a_point():
    low, high = f1_interval(_counts(exact=2, wrong=2, blamed=0, correct=1))
    assert low < 0.6 and high == 1.0  # a bootstrap would say (1.0, 1.0); the draws alone stopped below 1 …
    nothing = f1_interval(_counts(exact=0, wrong=3, blamed=0, correct=3))
    assert nothing[0] == 0.0 < nothing[1]  # … and above 0: the printed F1 lay outside its interval
    low_big, high_big = f1_interval(_counts(exact=200, wrong=200, blamed=0, correct=1000))
    assert 0.98 < low_big < high_big == 1.0


@given(labelled())
def test_the_f1_interval_is_ordered_and_inside_zero_one(pair):
    m = first_error_metrics(*pair)
    interval = f1_interval(m, draws=200)
    assert (interval is None) == (m["f1"] is None)
    if interval is not None:
        assert 0 <= interval[0] <= interval[1] <= 1
