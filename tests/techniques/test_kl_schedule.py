"""KL coefficient schedules: hand-computed values, bounds, and the config checks."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.techniques.kl_schedule import check_kl_schedule, kl_coefficient


@pytest.mark.parametrize(
    ("progress", "expected"), [(0.0, 0.04), (0.25, 0.03), (0.5, 0.02), (0.75, 0.01), (1.0, 0.0), (1.5, 0.0)]
)
def test_linear(progress, expected):
    assert kl_coefficient("linear", 0.04, 0.0, progress) == pytest.approx(expected)


@pytest.mark.parametrize(("progress", "expected"), [(0.0, 0.04), (1 / 3, 0.03), (0.5, 0.02), (1.0, 0.0)])
def test_cosine(progress, expected):
    # 0.04 * ½(1 + cos(π/3)) = 0.04 * 0.75 = 0.03
    assert kl_coefficient("cosine", 0.04, 0.0, progress) == pytest.approx(expected, abs=1e-12)


def test_floor_and_none():
    assert kl_coefficient("linear", 0.04, 0.01, 0.9) == pytest.approx(0.01)  # 0.004 floored
    assert kl_coefficient("cosine", 0.04, 0.01, 1.0) == pytest.approx(0.01)
    assert kl_coefficient("none", 0.04, 0.01, 0.9) == 0.04
    with pytest.raises(ValueError, match="kl_schedule='.*' is not allowed"):
        kl_coefficient("step", 0.04, 0.0, 0.5)


@given(
    schedule=st.sampled_from(["linear", "cosine"]),
    beta=st.floats(1e-4, 1.0),
    floor=st.floats(0.0, 1.0),
    p=st.floats(0.0, 1.0),
    q=st.floats(0.0, 1.0),
)
def test_monotone_and_bounded(schedule, beta, floor, p, q):
    beta_min = floor * beta
    lo, hi = sorted((p, q))
    b_lo, b_hi = kl_coefficient(schedule, beta, beta_min, lo), kl_coefficient(schedule, beta, beta_min, hi)
    assert b_hi <= b_lo + 1e-15
    assert beta_min <= b_hi and b_lo <= beta
    assert math.isclose(kl_coefficient(schedule, beta, beta_min, 0.0), beta)


def test_schedule_needs_positive_beta(tmp_path):
    with pytest.raises(ValueError, match="needs beta > 0"):
        ProcessGRPOConfig(output_dir=str(tmp_path), use_cpu=True, kl_schedule="linear", beta=0.0)
    with pytest.raises(ValueError, match="beta_min must be in"):
        check_kl_schedule("cosine", 0.04, 0.05)
    check_kl_schedule("none", 0.0, 0.0)  # no schedule: beta 0 is fine
