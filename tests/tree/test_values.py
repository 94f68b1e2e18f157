"""The tree's values, gains and scales (psgrpo/tree/values.py) and the ``tree`` estimator (psgrpo/advantages.py)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.advantages import ADVANTAGE_ESTIMATORS, tree_token_advantages
from psgrpo.techniques.reward_norm import group_advantages
from psgrpo.tree.options import prime_factors
from psgrpo.tree.values import (
    inner_ends,
    outcome_rewards,
    reward_scale,
    scaled_gains,
    segment_index,
    segment_index_from_ends,
    segment_spans,
    segment_value_gains,
    tree_path_values,
    tree_strides,
)

branchings = st.lists(st.integers(1, 3), min_size=1, max_size=4).filter(lambda b: math.prod(b) <= 24)


@st.composite
def trees(draw):
    """(branching, rewards (groups × G,)) with some unscorable (NaN) leaves."""
    branching = draw(branchings)
    groups = draw(st.integers(1, 3))
    n = groups * math.prod(branching)
    values = draw(
        st.lists(
            st.one_of(st.floats(-3, 3, allow_nan=False, width=32), st.just(math.nan)), min_size=n, max_size=n
        )
    )
    return branching, torch.tensor(values, dtype=torch.float32)


def brute_force_path(rewards: list[float], branching: list[int], row: int) -> list[float]:
    """V(prompt), V(node_0), …, V(node_{D−1}) of ``row`` by walking the tree's node ids explicitly."""
    group = math.prod(branching)
    first = row - row % group
    values = []
    for size in [group, *tree_strides(branching)]:
        start = first + ((row - first) // size) * size
        leaves = [r for r in rewards[start : start + size] if not math.isnan(r)]
        values.append(sum(leaves) / len(leaves) if leaves else math.nan)
    return values


@settings(max_examples=200, deadline=None)
@given(trees())
def test_values_are_the_mean_reward_of_the_leaves_below(tree):
    branching, rewards = tree
    values = tree_path_values(rewards, branching)
    assert values.shape == (rewards.numel(), len(branching) + 1)
    for row in range(rewards.numel()):
        expected = torch.tensor(brute_force_path(rewards.tolist(), branching, row))
        torch.testing.assert_close(values[row], expected, rtol=1e-5, atol=1e-5, equal_nan=True)


@settings(max_examples=200, deadline=None)
@given(trees())
def test_gains_telescope_to_the_outcome_advantage(tree):
    """Σ_k ΔV_k along a scorable leaf's path = r_i − mean(group): the tree splits A_i over the segments."""
    branching, rewards = tree
    gains = segment_value_gains(tree_path_values(rewards, branching))
    assert torch.isfinite(gains).all()
    group_mean = torch.nanmean(rewards.view(-1, math.prod(branching)), 1).repeat_interleave(
        math.prod(branching)
    )
    scorable = ~torch.isnan(rewards)
    torch.testing.assert_close(gains.sum(1)[scorable], (rewards - group_mean)[scorable], rtol=1e-4, atol=1e-4)


@settings(max_examples=100, deadline=None)
@given(trees(), st.sampled_from(["group", "batch", "none"]))
def test_one_level_gain_over_the_scale_is_trls_advantage(tree, scale_rewards):
    """With branching [G] the single segment's ΔV/σ is TRL's A_i, bit for bit (psgrpo's copy of TRL's formula)."""
    branching, rewards = tree
    group = math.prod(branching)
    gains = scaled_gains(tree_path_values(rewards, [group]), reward_scale(rewards, group, scale_rewards))
    expected = group_advantages(rewards, group, scale_rewards)
    scorable = ~torch.isnan(rewards)
    assert torch.isfinite(gains).all()
    assert torch.equal(gains[:, 0][scorable], expected[scorable])


def test_normalize_then_sum_rewards_follow_trl():
    """Each function normalised per group, then weighted: the A_i TRL builds from them is (r − mean) / scale."""
    per_func = torch.tensor([[2.0, 0.4], [0.0, 0.8], [2.0, 0.8], [0.0, 0.0]])
    weights = torch.tensor([1.0, 0.5])
    rewards = outcome_rewards(per_func, weights, 4, "normalize_then_sum")
    grouped = per_func.view(-1, 4, 2)
    normalized = (grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-4)
    torch.testing.assert_close(rewards, (normalized.view(-1, 2) * weights).sum(1))
    assert torch.allclose(reward_scale(rewards, 4, "group", "normalize_then_sum"), rewards.std() + 1e-4)
    assert torch.equal(outcome_rewards(per_func, weights, 4), (per_func * weights).sum(1))


def test_segment_index_cuts_every_s_tokens_and_the_last_level_runs_on():
    levels = segment_index([7, 3, 0], width=8, depth=3, segment_tokens=2)
    assert levels.tolist() == [
        [0, 0, 1, 1, 2, 2, 2, -1],
        [0, 0, 1, -1, -1, -1, -1, -1],
        [-1] * 8,
    ]


@settings(max_examples=100, deadline=None)
@given(length=st.integers(0, 40), depth=st.integers(1, 4), segment_tokens=st.integers(1, 12))
def test_segments_every_s_tokens_are_the_runs_of_segment_index(length, depth, segment_tokens):
    levels = segment_index([length], 48, depth, segment_tokens)[0].tolist()
    runs = [(k, max(t for t, v in enumerate(levels) if v == k) + 1) for k in sorted(set(levels) - {-1})]
    ends = inner_ends(length, depth, segment_tokens)
    assert segment_spans(ends, length) == runs
    assert segment_index_from_ends([ends], [length], 48).tolist() == [levels]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=0, max_size=3), st.integers(0, 4))
def test_segments_from_any_ends(steps, tail):
    """Ends cut where sampling cut (line ends, early stops): each token's level is the segment that holds it."""
    ends = [sum(steps[: k + 1]) for k in range(len(steps))]  # non-decreasing, repeats = empty segments
    length = (ends[-1] if ends else 0) + tail
    levels = segment_index_from_ends([ends], [length], length + 2)[0].tolist()
    assert levels[length:] == [-1, -1]
    spans = segment_spans(ends, length)
    starts = [0, *ends]
    for level, end in spans:
        assert end > starts[level]  # only non-empty segments
        assert levels[starts[level] : end] == [level] * (end - starts[level])
    assert sum(end - starts[level] for level, end in spans) == length  # they tile the completion


def test_prime_factors_are_the_default_tree():
    assert prime_factors(8) == [2, 2, 2] and prime_factors(4) == [2, 2] and prime_factors(6) == [2, 3]
    assert prime_factors(7) == [7] and prime_factors(1) == [1] and prime_factors(12) == [2, 2, 3]


# ---- the estimator -------------------------------------------------------------------------


def test_tree_is_registered_for_the_method():
    assert ADVANTAGE_ESTIMATORS.get("tree") is tree_token_advantages


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(1, 12),
    st.integers(1, 4),
    st.floats(0, 2),
    st.floats(0, 2),
    st.integers(0, 2**31 - 1),
)
def test_estimator_shapes_levels_and_padding(rows, width, depth, weight, lam, seed):
    generator = torch.Generator().manual_seed(seed)
    outcome = torch.randn(rows, generator=generator)
    gains = torch.randn(rows, depth, generator=generator)
    lengths = torch.randint(0, width + 1, (rows,), generator=generator).tolist()
    levels = segment_index(lengths, width, depth, segment_tokens=2)
    mask = (levels >= 0).long()
    scorable = torch.rand(rows, generator=generator) > 0.2
    result = tree_token_advantages(
        outcome_advantages=outcome,
        completion_mask=mask,
        segment_advantages=gains,
        segment_index=levels,
        scorable=scorable,
        outcome_weight=weight,
        lambda_=lam,
    )
    assert result.shape == (rows, width) and result.dtype == outcome.dtype
    assert (result[mask == 0] == 0).all(), "0 on padding"
    assert (result[~scorable] == 0).all(), "an unscorable row learns nothing, as in TRL"
    for i in range(rows):
        for t in range(lengths[i]):
            if scorable[i]:
                expected = weight * outcome[i] + lam * gains[i, levels[i, t]]
                assert result[i, t].item() == pytest.approx(expected.item(), abs=1e-5)


def test_estimator_with_one_level_and_w_0_hands_back_its_gain_exactly():
    """w = 0, λ = 1, one level: A_t is the level's ΔV/σ on every token (= A_i for the [G] tree), to the bit."""
    gains = torch.tensor([[0.123456789], [-1.5], [2.0 / 3.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]])
    result = tree_token_advantages(
        outcome_advantages=torch.tensor([9.0, -9.0, 3.0]),
        completion_mask=mask,
        segment_advantages=gains,
        segment_index=torch.where(mask.bool(), 0, -1),
    )
    assert torch.equal(result, gains * mask)


def test_estimator_refuses_levels_it_has_no_gain_for():
    with pytest.raises(ValueError, match="segment_index reaches segment 2 but segment_values has only 2"):
        tree_token_advantages(
            outcome_advantages=torch.zeros(1),
            completion_mask=torch.ones(1, 3),
            segment_advantages=torch.zeros(1, 2),
            segment_index=torch.tensor([[0, 1, 2]]),
        )


def test_tree_metrics_count_the_branchings_that_carry_a_signal():
    """[2, 2], two groups: group 0's roots differ and one root's leaves differ; group 1 is all equal."""
    from psgrpo.tree.signal import tree_metrics

    rewards = torch.tensor([2.8, 0.8, 0.8, 0.8, 1.0, 1.0, 1.0, 1.0])  # correct + format, e.g. 2.0 + 0.8
    values = tree_path_values(rewards, [2, 2])
    gains = scaled_gains(values, reward_scale(rewards, 4, "group"))
    metrics = tree_metrics(values, gains, [2, 2])
    # inner nodes: 2 prompts + 4 roots; split: prompt 0, root (0, 0)
    assert metrics["tree/split_node_frac"] == pytest.approx(2 / 6)
    assert metrics["tree/depth"] == 2.0
    std = rewards[:4].std().item() + 1e-4
    assert metrics["tree/abs_gain_level_0"] == pytest.approx((4 * 0.5 / std) / 8, rel=1e-5)
    assert metrics["tree/abs_gain_level_1"] == pytest.approx((2 * 1.0 / std) / 8, rel=1e-5)


def test_tree_metrics_leave_unscorable_leaves_out():
    """[1, 0, NaN, 1]: the prompt's scorable leaves differ (a split), and the unscorable leaf's level gains (which
    the estimator never gives it) are not averaged in (a review found both miscounted, 2026-12-07)."""
    from psgrpo.tree.signal import tree_metrics

    rewards = torch.tensor([1.0, 0.0, math.nan, 1.0])
    values = tree_path_values(rewards, [2, 2])
    gains = scaled_gains(values, reward_scale(rewards, 4, "group"))
    metrics = tree_metrics(values, gains, [2, 2])
    # split: the prompt and root 0 (1 vs 0); root 1 has one scorable leaf
    assert metrics["tree/split_node_frac"] == pytest.approx(2 / 3)
    scorable = [0, 1, 3]
    assert metrics["tree/abs_gain_level_0"] == pytest.approx(gains[scorable, 0].abs().mean().item())
