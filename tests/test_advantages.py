"""Tests for psgrpo.advantages: the estimator registry, outcome token advantages, group normalisation."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo import advantages
from psgrpo.advantages import (
    ADVANTAGE_ESTIMATORS,
    estimator_name,
    grpo_token_advantages,
    ps_token_advantages,
    tree_token_advantages,
    vps_token_advantages,
)
from psgrpo.config.options import RETIRED_ESTIMATORS, AdvantageEstimator, Method, allowed
from psgrpo.techniques.reward_norm import group_advantages

EPS = 1e-4


# -----------------------------------------------------------------------------
# registry


def test_each_method_has_a_registered_estimator_of_its_own_name():
    assert allowed(AdvantageEstimator) == allowed(Method) == ("grpo", "ps", "vps", "tree")
    functions = [grpo_token_advantages, ps_token_advantages, vps_token_advantages, tree_token_advantages]
    for method, function in zip(allowed(Method), functions, strict=True):
        assert estimator_name(method) == method
        assert ADVANTAGE_ESTIMATORS.get(method) is function
    assert not any(old in ADVANTAGE_ESTIMATORS for old in RETIRED_ESTIMATORS)


def test_advantage_estimator_overrides_the_methods_own():
    assert estimator_name("ps", "my_estimator") == "my_estimator"
    assert estimator_name("vps", "grpo") == "grpo"


# -----------------------------------------------------------------------------
# outcome token advantages


def test_grpo_token_advantages_hand_example():
    a = torch.tensor([1.5, -0.5, 0.0])
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]])
    expected = torch.tensor([[1.5, 1.5, 0.0, 0.0], [-0.5, -0.5, -0.5, -0.5], [0.0, 0.0, 0.0, 0.0]])
    result = grpo_token_advantages(outcome_advantages=a, completion_mask=mask)
    assert result.dtype == torch.float32
    torch.testing.assert_close(result, expected, rtol=0, atol=0)


def test_grpo_token_advantages_ignores_extra_keywords():
    a, mask = torch.tensor([2.0]), torch.ones(1, 3)
    result = ADVANTAGE_ESTIMATORS.get("grpo")(outcome_advantages=a, completion_mask=mask, step_rewards=None)
    torch.testing.assert_close(result, torch.full((1, 3), 2.0))


def test_grpo_token_advantages_accepts_a_bool_mask():
    result = grpo_token_advantages(
        outcome_advantages=torch.tensor([3.0]), completion_mask=torch.tensor([[True, False]])
    )
    torch.testing.assert_close(result, torch.tensor([[3.0, 0.0]]), rtol=0, atol=0)


@given(data=st.data(), b=st.integers(1, 6), t=st.integers(1, 12))
@settings(max_examples=100, deadline=None)
def test_grpo_token_advantages_broadcast_on_mask(data, b, t):
    a = torch.tensor(data.draw(st.lists(st.floats(-10, 10), min_size=b, max_size=b)), dtype=torch.float32)
    mask = torch.tensor(
        data.draw(st.lists(st.lists(st.integers(0, 1), min_size=t, max_size=t), min_size=b, max_size=b))
    )
    result = grpo_token_advantages(outcome_advantages=a, completion_mask=mask)
    assert result.shape == (b, t)
    on = mask.bool()
    assert torch.equal(result[on], a.unsqueeze(1).expand(b, t)[on])
    assert (result[~on] == 0).all()


def test_group_has_variance_ignores_float_rounding_of_equal_rewards():
    # Eight equal rewards of 0.8: the float32 mean is not exactly 0.8, so TRL's advantages are a
    # small non-zero constant; the group still has no variance.
    rewards = torch.full((8,), 0.8, dtype=torch.float32)
    equal = group_advantages(rewards + torch.tensor(0.1) - torch.tensor(0.1), 8, "group")
    mixed = group_advantages(torch.tensor([0.8] * 7 + [2.8]), 8, "group")
    flags = advantages.group_has_variance(torch.cat([equal, mixed]), 8)
    assert flags.tolist() == [False] * 8 + [True] * 8


def test_group_has_variance_on_a_nonzero_constant_group():
    adv = torch.tensor([-6e-4, -6e-4, -6e-4, -6e-4, 0.5, -0.5, 0.0, 0.0])
    assert advantages.group_has_variance(adv, 4).tolist() == [False] * 4 + [True] * 4
