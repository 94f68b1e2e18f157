"""Running reward statistics (EMA) and the group advantage they feed."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.techniques.reward_norm import EPS, RunningRewardStats, group_advantages, weighted_rewards


def test_ema_hand_computed():
    stats = RunningRewardStats(momentum=0.5)
    stats.update(torch.tensor([1.0, 3.0]))  # first batch initialises: mean 2, var 1
    assert (stats.mean, stats.var, stats.updates) == (2.0, 1.0, 1)
    stats.update(torch.tensor([5.0, 5.0]))  # δ = 3: mean 2 + 0.5·3, var 0.5·1 + 0.5·0 + 0.25·9
    assert stats.mean == pytest.approx(3.5)
    assert stats.var == pytest.approx(2.75)
    normalized = stats.normalize(torch.tensor([3.5, 3.5 + math.sqrt(2.75)]))
    torch.testing.assert_close(normalized, torch.tensor([0.0, math.sqrt(2.75) / (math.sqrt(2.75) + EPS)]))


def test_nan_ignored_and_empty_batch():
    stats = RunningRewardStats(momentum=0.9)
    stats.update(torch.tensor([float("nan"), 2.0, 4.0]))
    assert (stats.mean, stats.var) == (3.0, 1.0)
    stats.update(torch.tensor([float("nan")]))
    assert stats.updates == 1
    assert torch.isnan(stats.normalize(torch.tensor([float("nan")]))).all()


def test_momentum_range_and_state_round_trip():
    with pytest.raises(ValueError, match=r"reward_norm_momentum must be in \[0, 1\)"):
        RunningRewardStats(momentum=1.0)
    stats = RunningRewardStats(momentum=0.3)
    stats.update(torch.tensor([0.0, 1.0, 5.0]))
    restored = RunningRewardStats(momentum=0.3)
    restored.load_state_dict(stats.state_dict())
    assert restored == stats


@given(
    m=st.floats(0.0, 0.99),
    a=st.lists(st.floats(-10, 10), min_size=1, max_size=8),
    b=st.lists(st.floats(-10, 10), min_size=1, max_size=8),
)
def test_two_batches_give_mixture_moments(m, a, b):
    """After two batches: the mean/variance of the mixture (first batch weight m, second 1 − m)."""
    stats = RunningRewardStats(momentum=m)
    ta, tb = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    stats.update(ta)
    stats.update(tb)
    ma, mb = ta.mean().item(), tb.mean().item()
    va, vb = ta.var(unbiased=False).item(), tb.var(unbiased=False).item()
    mean = m * ma + (1 - m) * mb
    var = m * (va + (ma - mean) ** 2) + (1 - m) * (vb + (mb - mean) ** 2)
    assert stats.mean == pytest.approx(mean, abs=1e-9)
    assert stats.var == pytest.approx(var, abs=1e-8)


def test_weighted_rewards_nan_rows():
    per_func = torch.tensor([[2.0, 0.8], [float("nan"), 0.4], [float("nan"), float("nan")]])
    rewards = weighted_rewards(per_func, torch.tensor([1.0, 0.5]))
    torch.testing.assert_close(rewards[:2], torch.tensor([2.4, 0.2]))
    assert torch.isnan(rewards[2])


def test_group_advantages_hand_computed():
    rewards = torch.tensor([1.0, 3.0, 2.0, 2.0])
    torch.testing.assert_close(group_advantages(rewards, 2, "none"), torch.tensor([-1.0, 1.0, 0.0, 0.0]))
    s = math.sqrt(2.0)  # unbiased std of [1, 3]
    torch.testing.assert_close(
        group_advantages(rewards, 2, "group"), torch.tensor([-1 / (s + EPS), 1 / (s + EPS), 0.0, 0.0])
    )
    b = math.sqrt(2.0 / 3.0)  # unbiased std of the whole batch
    torch.testing.assert_close(
        group_advantages(rewards, 2, "batch"), torch.tensor([-1 / (b + EPS), 1 / (b + EPS), 0.0, 0.0])
    )
    with_nan = group_advantages(torch.tensor([1.0, float("nan"), 3.0, 1.0, 2.0, 3.0]), 3, "none")
    torch.testing.assert_close(with_nan, torch.tensor([-1.0, 0.0, 1.0, -1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="scale_rewards"):
        group_advantages(rewards, 2, "max")


def test_normalisation_only_matters_without_std_scaling():
    """(r − μ)/σ is undone by group std scaling, but rescales the unscaled (Dr. GRPO) advantage by 1/σ."""
    rewards = torch.tensor([0.0, 2.8, 2.0, 0.2, 0.8, 0.8, 0.0, 2.8], dtype=torch.float64)
    stats = RunningRewardStats(momentum=0.9)
    stats.update(rewards)
    normalized = stats.normalize(rewards)
    torch.testing.assert_close(
        group_advantages(normalized, 4, "group"), group_advantages(rewards, 4, "group"), rtol=1e-3, atol=1e-3
    )
    torch.testing.assert_close(
        group_advantages(normalized, 4, "none"), group_advantages(rewards, 4, "none") / (stats.std + EPS)
    )
