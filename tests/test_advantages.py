"""Tests for psgrpo.advantages: the estimator registry, outcome token advantages, group normalisation."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from trl.trainer.utils import nanstd

from psgrpo import advantages
from psgrpo.advantages import (
    ADVANTAGE_ESTIMATORS,
    METHOD_ESTIMATORS,
    get_advantage_estimator,
    group_normalize,
    outcome_token_advantages,
    register_advantage_estimator,
)

EPS = 1e-4


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
# registry


def test_outcome_is_registered():
    assert ADVANTAGE_ESTIMATORS["outcome"] is outcome_token_advantages
    assert get_advantage_estimator("outcome") is outcome_token_advantages


def test_method_estimators():
    assert METHOD_ESTIMATORS["grpo"] == "outcome"
    assert set(METHOD_ESTIMATORS) == {"grpo", "ps", "vps"}


def test_unknown_estimator_lists_registered_names():
    with pytest.raises(ValueError, match="'nope'") as info:
        get_advantage_estimator("nope")
    for name in ADVANTAGE_ESTIMATORS:
        assert repr(name) in str(info.value)


def test_registering_another_function_under_an_existing_name_raises():
    with pytest.raises(ValueError, match="'outcome'"):
        register_advantage_estimator("outcome")(lambda **_: None)
    assert ADVANTAGE_ESTIMATORS["outcome"] is outcome_token_advantages


def test_registering_the_same_function_again_is_allowed():
    assert register_advantage_estimator("outcome")(outcome_token_advantages) is outcome_token_advantages
    assert ADVANTAGE_ESTIMATORS["outcome"] is outcome_token_advantages


def test_register_adds_a_new_estimator(monkeypatch):
    monkeypatch.setattr(advantages, "ADVANTAGE_ESTIMATORS", dict(ADVANTAGE_ESTIMATORS))

    @register_advantage_estimator("test_zero")
    def zero(*, outcome_advantages, completion_mask, **_):
        return torch.zeros_like(completion_mask, dtype=outcome_advantages.dtype)

    assert advantages.get_advantage_estimator("test_zero") is zero
    assert "test_zero" not in ADVANTAGE_ESTIMATORS  # the real registry is untouched


# -----------------------------------------------------------------------------
# outcome token advantages


def test_outcome_token_advantages_hand_example():
    a = torch.tensor([1.5, -0.5, 0.0])
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]])
    expected = torch.tensor([[1.5, 1.5, 0.0, 0.0], [-0.5, -0.5, -0.5, -0.5], [0.0, 0.0, 0.0, 0.0]])
    result = outcome_token_advantages(outcome_advantages=a, completion_mask=mask)
    assert result.dtype == torch.float32
    torch.testing.assert_close(result, expected, rtol=0, atol=0)


def test_outcome_token_advantages_ignores_extra_keywords():
    a, mask = torch.tensor([2.0]), torch.ones(1, 3)
    result = get_advantage_estimator("outcome")(outcome_advantages=a, completion_mask=mask, step_rewards=None)
    torch.testing.assert_close(result, torch.full((1, 3), 2.0))


def test_outcome_token_advantages_accepts_a_bool_mask():
    result = outcome_token_advantages(
        outcome_advantages=torch.tensor([3.0]), completion_mask=torch.tensor([[True, False]])
    )
    torch.testing.assert_close(result, torch.tensor([[3.0, 0.0]]), rtol=0, atol=0)


@given(data=st.data(), b=st.integers(1, 6), t=st.integers(1, 12))
@settings(max_examples=100, deadline=None)
def test_outcome_token_advantages_broadcast_on_mask(data, b, t):
    a = torch.tensor(data.draw(st.lists(st.floats(-10, 10), min_size=b, max_size=b)), dtype=torch.float32)
    mask = torch.tensor(
        data.draw(st.lists(st.lists(st.integers(0, 1), min_size=t, max_size=t), min_size=b, max_size=b))
    )
    result = outcome_token_advantages(outcome_advantages=a, completion_mask=mask)
    assert result.shape == (b, t)
    on = mask.bool()
    assert torch.equal(result[on], a.unsqueeze(1).expand(b, t)[on])
    assert (result[~on] == 0).all()


# -----------------------------------------------------------------------------
# group_normalize: hand-computed values


def test_group_normalize_hand_example():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    std = math.sqrt(1 / 3)  # unbiased std of [1, 0, 0, 1]: sum of squares 4 * 0.25 = 1, over n - 1 = 3
    a = 0.5 / (std + EPS)
    expected = torch.tensor([a, -a, -a, a, 0.0, 0.0, 0.0, 0.0])
    torch.testing.assert_close(group_normalize(rewards, 4), expected)


def test_group_normalize_scale_none_only_centres():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    expected = torch.tensor([0.5, -0.5, -0.5, 0.5, 0.0, 0.0, 0.0, 0.0])
    torch.testing.assert_close(group_normalize(rewards, 4, scale="none"), expected)


def test_group_normalize_scale_batch_divides_by_batch_std():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    # batch mean 1.25; squared deviations 2 * 0.0625 (1s) + 2 * 1.5625 (0s) + 4 * 0.5625 (2s) = 5.5
    batch_std = math.sqrt(5.5 / 7)
    expected = torch.tensor([0.5, -0.5, -0.5, 0.5, 0.0, 0.0, 0.0, 0.0]) / (batch_std + EPS)
    torch.testing.assert_close(group_normalize(rewards, 4, scale="batch"), expected)


def test_group_normalize_two_completions():
    # G = 2: unbiased std of [3, 1] is sqrt(2), deviations +-1
    a = 1 / (math.sqrt(2) + EPS)
    torch.testing.assert_close(group_normalize(torch.tensor([3.0, 1.0]), 2), torch.tensor([a, -a]))


def test_group_normalize_single_generation_gives_zero():
    torch.testing.assert_close(group_normalize(torch.tensor([1.0, 5.0, -2.0]), 1), torch.zeros(3))


def test_group_normalize_nan_rows_are_excluded_and_get_zero():
    rewards = torch.tensor([1.0, float("nan"), 0.0, 2.0])
    # group stats over [1, 0, 2]: mean 1, unbiased std 1
    expected = torch.tensor([0.0, 0.0, -1 / (1 + EPS), 1 / (1 + EPS)])
    torch.testing.assert_close(group_normalize(rewards, 4), expected)


def test_group_normalize_all_nan_group_is_zero():
    rewards = torch.tensor([float("nan"), float("nan"), 1.0, 3.0])
    a = 1 / (math.sqrt(2) + EPS)
    torch.testing.assert_close(group_normalize(rewards, 2), torch.tensor([0.0, 0.0, -a, a]))


def test_group_normalize_custom_eps():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0])
    a = 0.5 / (math.sqrt(1 / 3) + 0.5)
    torch.testing.assert_close(group_normalize(rewards, 4, eps=0.5), torch.tensor([a, -a, -a, a]))


def test_group_normalize_keeps_dtype():
    assert group_normalize(torch.tensor([1.0, 0.0], dtype=torch.float64), 2).dtype == torch.float64


@pytest.mark.parametrize("values", [torch.zeros(5), torch.zeros(2, 2)])
def test_group_normalize_bad_shape_raises(values):
    with pytest.raises(ValueError, match="num_generations=2"):
        group_normalize(values, 2)


def test_group_normalize_bad_scale_raises():
    with pytest.raises(ValueError, match="'std'"):
        group_normalize(torch.zeros(4), 2, scale="std")


# -----------------------------------------------------------------------------
# group_normalize: properties


@pytest.mark.parametrize("scale", ["group", "none", "batch"])
@given(case=grouped_rewards(allow_nan=True))
@settings(max_examples=60, deadline=None)
def test_group_normalize_matches_trl(scale, case):
    rewards, g = case
    torch.testing.assert_close(group_normalize(rewards, g, scale=scale), trl_reference(rewards, g, scale))


@pytest.mark.parametrize("scale", ["group", "none", "batch"])
def test_group_normalize_matches_trl_float32(scale):
    rewards = torch.tensor([2.8, 0.8, 0.0, 2.8, 1.2, float("nan"), 0.4, 0.4, 2.0, 2.0, 2.0, 2.0])
    torch.testing.assert_close(group_normalize(rewards, 4, scale=scale), trl_reference(rewards, 4, scale))


@given(case=grouped_rewards(), shift=REWARD, data=st.data())
@settings(max_examples=100, deadline=None)
def test_group_normalize_is_shift_invariant_per_group(case, shift, data):
    rewards, g = case
    group = data.draw(st.integers(0, rewards.numel() // g - 1))
    shifted = rewards.clone()
    shifted[group * g : (group + 1) * g] += shift
    torch.testing.assert_close(group_normalize(shifted, g), group_normalize(rewards, g))
    torch.testing.assert_close(
        group_normalize(shifted, g, scale="none"), group_normalize(rewards, g, scale="none")
    )


@given(case=grouped_rewards(allow_nan=True), data=st.data())
@settings(max_examples=100, deadline=None)
def test_group_normalize_is_permutation_equivariant_within_groups(case, data):
    rewards, g = case
    n_groups = rewards.numel() // g
    perm = torch.cat([torch.tensor(data.draw(st.permutations(range(g)))) + k * g for k in range(n_groups)])
    torch.testing.assert_close(group_normalize(rewards[perm], g), group_normalize(rewards, g)[perm])


@given(case=grouped_rewards(allow_nan=True))
@settings(max_examples=100, deadline=None)
def test_group_normalize_sums_to_zero_per_group(case):
    rewards, g = case
    result = group_normalize(rewards, g).view(-1, g)
    assert torch.isfinite(result).all()
    torch.testing.assert_close(result.sum(dim=1), torch.zeros(result.shape[0], dtype=result.dtype))


def test_group_has_variance_ignores_float_rounding_of_equal_rewards():
    # Eight equal rewards of 0.8: the float32 mean is not exactly 0.8, so TRL's advantages are a
    # small non-zero constant; the group still has no variance.
    rewards = torch.full((8,), 0.8, dtype=torch.float32)
    equal = advantages.group_normalize(rewards + torch.tensor(0.1) - torch.tensor(0.1), 8)
    mixed = advantages.group_normalize(torch.tensor([0.8] * 7 + [2.8]), 8)
    flags = advantages.group_has_variance(torch.cat([equal, mixed]), 8)
    assert flags.tolist() == [False] * 8 + [True] * 8


def test_group_has_variance_on_a_nonzero_constant_group():
    adv = torch.tensor([-6e-4, -6e-4, -6e-4, -6e-4, 0.5, -0.5, 0.0, 0.0])
    assert advantages.group_has_variance(adv, 4).tolist() == [False] * 4 + [True] * 4
