"""intervals: t quantiles (table and computed), means with their confidence intervals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.compare.intervals import (
    T_975,
    incomplete_beta,
    mean_interval,
    t_coverage,
    t_quantile,
    t_quantile_95,
)


def test_t_quantiles_and_mean_interval_by_hand():
    assert t_quantile_95(1) == 12.706 and t_quantile_95(4) == 2.776 and t_quantile_95(30) == 2.042
    # beyond the table Student's t still, not the normal's 1.96 (31+ seeds would get too narrow an interval)
    assert t_quantile_95(40) == pytest.approx(2.021, abs=5e-4) and t_quantile_95(200) == pytest.approx(
        1.972, abs=5e-4
    )
    assert t_quantile_95(31) < t_quantile_95(30)
    with pytest.raises(ValueError):
        t_quantile_95(0)
    interval = mean_interval([0.50, 0.55, 0.60, 0.65, 0.70])  # n = 5: stdev 0.0790569, t(4) = 2.776
    assert interval.mean == pytest.approx(0.6) and interval.n == 5
    assert interval.half_width == pytest.approx(2.776 * 0.0790569415 / math.sqrt(5))
    assert interval.excludes_zero() and not mean_interval([-0.1, 0.1, 0.05]).excludes_zero()
    single = mean_interval([0.3])
    assert math.isnan(single.half_width) and not single.excludes_zero() and str(single) == "0.300"


def test_computed_quantiles_match_the_printed_table_and_known_values():
    for df, printed in enumerate(T_975, start=1):
        assert t_quantile(0.95, df) == pytest.approx(printed, abs=6e-4), df
    assert t_quantile(0.99, 10) == pytest.approx(3.169, abs=1e-3)  # t_{0.995, 10}
    assert t_quantile(0.99, 4) == pytest.approx(4.604, abs=1e-3)
    assert t_quantile(0.9975, 1) == pytest.approx(254.65, abs=0.01)  # Bonferroni over 20 arms, 2 seeds
    assert t_quantile(0.95, 100_000) == pytest.approx(1.95996, abs=1e-4)  # → the normal quantile
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        t_quantile(1.0, 4)
    with pytest.raises(ValueError, match="at least 2 values"):
        t_quantile(0.95, 0)


def test_incomplete_beta_closed_forms():
    assert incomplete_beta(1.0, 1.0, 0.3) == pytest.approx(0.3)  # uniform
    assert incomplete_beta(2.0, 1.0, 0.5) == pytest.approx(0.25)  # x^a when b = 1
    assert incomplete_beta(0.5, 0.5, 0.5) == pytest.approx(0.5)  # symmetric
    assert incomplete_beta(3.0, 2.0, 0.0) == 0.0 and incomplete_beta(3.0, 2.0, 1.0) == 1.0


def test_a_wider_level_gives_a_wider_interval():
    values = [0.01, 0.05, -0.02, 0.04, 0.03]
    at_95, bonferroni = mean_interval(values), mean_interval(values, level=1 - 0.05 / 4)
    assert at_95.level == 0.95 and bonferroni.level == pytest.approx(0.9875)
    assert bonferroni.mean == at_95.mean and bonferroni.half_width > at_95.half_width
    assert bonferroni.half_width / at_95.half_width == pytest.approx(t_quantile(0.9875, 4) / 2.776, rel=1e-9)


@given(st.floats(0.5, 0.9999), st.integers(1, 60))
def test_quantile_inverts_coverage(level, df):
    assert t_coverage(t_quantile(level, df), df) == pytest.approx(level, abs=1e-9)


def test_a_nan_value_is_a_clear_error():
    with pytest.raises(ValueError, match="a mean interval needs numbers, got NaN"):
        mean_interval([0.3, float("nan"), 0.2])
