"""Running reward statistics (EMA) and the group advantage they feed."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from trl.trainer.utils import nanstd

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


def test_batches_of_equal_rewards_do_not_seed_the_scale():
    """Sparse success: all-wrong batches first. σ² grown from 0 at rate 1 − m made the first rewards that vary
    about ten times too large (max advantage 24.7 instead of 2.6 at m = 0.99, 1 in 8 correct)."""
    stats = RunningRewardStats(momentum=0.99)
    for _ in range(3):
        stats.update(torch.zeros(8))
    assert stats.var == 0.0
    one_in_eight = torch.tensor([2.0] + [0.0] * 7)
    stats.update(one_in_eight)
    assert stats.std == pytest.approx(one_in_eight.std(unbiased=False).item())
    stats.update(torch.zeros(8))  # once the scale is known, an equal batch is averaged in as usual
    assert 0 < stats.var < one_in_eight.var(unbiased=False).item()


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
    """After two batches: the mean/variance of the mixture (first batch weight m, second 1 − m), or the second
    batch's own when the first had no spread (equal rewards carry no scale)."""
    stats = RunningRewardStats(momentum=m)
    ta, tb = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    stats.update(ta)
    stats.update(tb)
    ma, mb = ta.mean().item(), tb.mean().item()
    va, vb = ta.var(unbiased=False).item(), tb.var(unbiased=False).item()
    mean = m * ma + (1 - m) * mb if va > 0 else mb
    var = m * (va + (ma - mean) ** 2) + (1 - m) * (vb + (mb - mean) ** 2) if va > 0 else vb
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


# TRL-equivalence of the group advantage that runs (moved from tests/test_advantages.py)


def trl_reference(rewards: torch.Tensor, num_generations: int, scale: str) -> torch.Tensor:
    """TRL 1.16 ``GRPOTrainer`` group advantages (``sum_then_normalize``), copied formula by formula."""
    mean_grouped = torch.nanmean(rewards.view(-1, num_generations), dim=1)
    mean_grouped = mean_grouped.repeat_interleave(num_generations, dim=0)
    if scale in ["group", "none"]:
        if num_generations > 1:
            std = nanstd(rewards.view(-1, num_generations), dim=1).repeat_interleave(num_generations, dim=0)
        else:
            std = torch.zeros_like(rewards)
    else:  # batch
        std = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
    result = rewards - mean_grouped
    if scale != "none":
        result = result / (std + 1e-4)
    return torch.nan_to_num(result, nan=0.0)


# Rewards on a quarter grid (exact in binary floating point), like real reward sums (2.0, 0.8, ...).
REWARD = st.integers(-12, 12).map(lambda k: k / 4)


@st.composite
def grouped_rewards(draw, allow_nan: bool = False):
    g = draw(st.integers(1, 6))
    n_groups = draw(st.integers(1, 5))
    element = st.one_of(REWARD, st.just(math.nan)) if allow_nan else REWARD
    values = draw(st.lists(element, min_size=g * n_groups, max_size=g * n_groups))
    return torch.tensor(values, dtype=torch.float64), g


# -----------------------------------------------------------------------------
# group_advantages: hand-computed values


def test_group_advantages_hand_example():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    std = math.sqrt(1 / 3)  # unbiased std of [1, 0, 0, 1]: sum of squares 4 * 0.25 = 1, over n - 1 = 3
    a = 0.5 / (std + EPS)
    expected = torch.tensor([a, -a, -a, a, 0.0, 0.0, 0.0, 0.0])
    torch.testing.assert_close(group_advantages(rewards, 4, "group"), expected)


def test_group_advantages_scale_none_only_centres():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    expected = torch.tensor([0.5, -0.5, -0.5, 0.5, 0.0, 0.0, 0.0, 0.0])
    torch.testing.assert_close(group_advantages(rewards, 4, "none"), expected)


def test_group_advantages_scale_batch_divides_by_batch_std():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    # batch mean 1.25; squared deviations 2 * 0.0625 (1s) + 2 * 1.5625 (0s) + 4 * 0.5625 (2s) = 5.5
    batch_std = math.sqrt(5.5 / 7)
    expected = torch.tensor([0.5, -0.5, -0.5, 0.5, 0.0, 0.0, 0.0, 0.0]) / (batch_std + EPS)
    torch.testing.assert_close(group_advantages(rewards, 4, "batch"), expected)


def test_group_advantages_two_completions():
    # G = 2: unbiased std of [3, 1] is sqrt(2), deviations +-1
    a = 1 / (math.sqrt(2) + EPS)
    torch.testing.assert_close(group_advantages(torch.tensor([3.0, 1.0]), 2, "group"), torch.tensor([a, -a]))


def test_group_advantages_single_generation_gives_zero():
    torch.testing.assert_close(group_advantages(torch.tensor([1.0, 5.0, -2.0]), 1, "group"), torch.zeros(3))


def test_group_advantages_nan_rows_are_excluded_and_get_zero():
    rewards = torch.tensor([1.0, float("nan"), 0.0, 2.0])
    # group stats over [1, 0, 2]: mean 1, unbiased std 1
    expected = torch.tensor([0.0, 0.0, -1 / (1 + EPS), 1 / (1 + EPS)])
    torch.testing.assert_close(group_advantages(rewards, 4, "group"), expected)


def test_group_advantages_all_nan_group_is_zero():
    rewards = torch.tensor([float("nan"), float("nan"), 1.0, 3.0])
    a = 1 / (math.sqrt(2) + EPS)
    torch.testing.assert_close(group_advantages(rewards, 2, "group"), torch.tensor([0.0, 0.0, -a, a]))


# -----------------------------------------------------------------------------
# group_advantages: properties


@pytest.mark.parametrize("scale", ["group", "none", "batch"])
@given(case=grouped_rewards(allow_nan=True))
@settings(max_examples=60, deadline=None)
def test_group_advantages_matches_trl(scale, case):
    rewards, g = case
    torch.testing.assert_close(group_advantages(rewards, g, scale), trl_reference(rewards, g, scale))


@pytest.mark.parametrize("scale", ["group", "none", "batch"])
def test_group_advantages_matches_trl_float32(scale):
    rewards = torch.tensor([2.8, 0.8, 0.0, 2.8, 1.2, float("nan"), 0.4, 0.4, 2.0, 2.0, 2.0, 2.0])
    torch.testing.assert_close(group_advantages(rewards, 4, scale), trl_reference(rewards, 4, scale))


@given(case=grouped_rewards(), shift=REWARD, data=st.data())
@settings(max_examples=100, deadline=None)
def test_group_advantages_is_shift_invariant_per_group(case, shift, data):
    rewards, g = case
    group = data.draw(st.integers(0, rewards.numel() // g - 1))
    shifted = rewards.clone()
    shifted[group * g : (group + 1) * g] += shift
    torch.testing.assert_close(group_advantages(shifted, g, "group"), group_advantages(rewards, g, "group"))
    torch.testing.assert_close(group_advantages(shifted, g, "none"), group_advantages(rewards, g, "none"))


@given(case=grouped_rewards(allow_nan=True), data=st.data())
@settings(max_examples=100, deadline=None)
def test_group_advantages_is_permutation_equivariant_within_groups(case, data):
    rewards, g = case
    n_groups = rewards.numel() // g
    perm = torch.cat([torch.tensor(data.draw(st.permutations(range(g)))) + k * g for k in range(n_groups)])
    torch.testing.assert_close(
        group_advantages(rewards[perm], g, "group"), group_advantages(rewards, g, "group")[perm]
    )


@given(case=grouped_rewards(allow_nan=True))
@settings(max_examples=100, deadline=None)
def test_group_advantages_sums_to_zero_per_group(case):
    rewards, g = case
    result = group_advantages(rewards, g, "group").view(-1, g)
    assert torch.isfinite(result).all()
    torch.testing.assert_close(result.sum(dim=1), torch.zeros(result.shape[0], dtype=result.dtype))
