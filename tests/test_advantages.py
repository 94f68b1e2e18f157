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


def test_group_has_variance_leaves_out_rows_no_reward_function_scored():
    """TRL gives an unscorable row A = 0 while its equal-reward siblings keep a rounding residue (−2.4e-3
    for 2.7844529): compared with them it looked like variance, so vps_zero_variance='drop' kept the group."""
    adv = torch.tensor([-2.4e-3, -2.4e-3, -2.4e-3, 0.0, 0.5, -0.5, 0.0, 0.0, 0.3, 0.0, 0.0, 0.0])
    scorable = torch.tensor([True, True, True, False, True, True, True, False, True, False, False, False])
    assert advantages.group_has_variance(adv, 4).tolist()[:4] == [True] * 4  # the bug, without the mask
    flags = advantages.group_has_variance(adv, 4, scorable)
    assert flags.tolist() == [False] * 4 + [True] * 4 + [False] * 4  # one scorable member: no variance
    assert torch.equal(advantages.group_has_variance(adv, 4, torch.ones(12, dtype=torch.bool)),
                       advantages.group_has_variance(adv, 4))  # fmt: skip


# -----------------------------------------------------------------------------
# the one core of segment credit (ps, vps and tree are segment_credit with their own values)


@st.composite
def segment_batches(draw):
    """Rows of B × T tokens cut into segments 0..S−1 in order, right padding −1, values per segment."""
    b, t, s = draw(st.integers(1, 4)), draw(st.integers(1, 12)), draw(st.integers(1, 5))
    index, mask = [], []
    for _ in range(b):
        length = draw(st.integers(0, t))
        cuts = sorted(draw(st.lists(st.integers(0, length), max_size=s - 1)))
        row = [sum(c <= i for c in cuts) for i in range(length)]
        index.append(row + [-1] * (t - length))
        mask.append([1] * length + [0] * (t - length))
    floats = st.floats(-3, 3, allow_nan=False, width=32)
    values = torch.tensor([[draw(floats) for _ in range(s)] for _ in range(b)])
    outcome = torch.tensor([draw(floats) for _ in range(b)])
    flags = [torch.tensor(draw(st.lists(st.booleans(), min_size=b, max_size=b))) for _ in range(2)]
    return outcome, torch.tensor(mask), values, torch.tensor(index), *flags


@given(segment_batches(), st.floats(0, 2), st.floats(0, 2))
@settings(max_examples=60, deadline=None)
def test_segment_credit_is_the_formula_token_by_token(batch, w, lam):
    outcome, mask, values, index, outcome_only, zeroed = batch
    got = advantages.segment_credit(
        outcome_advantages=outcome, completion_mask=mask, segment_values=values, segment_index=index,
        outcome_weight=w, lambda_=lam, outcome_only=outcome_only, zeroed=zeroed,
    )  # fmt: skip
    for i in range(mask.shape[0]):
        for t in range(mask.shape[1]):
            if not mask[i, t] or zeroed[i]:
                want = 0.0
            elif outcome_only[i]:
                want = float(outcome[i])
            else:
                want = w * float(outcome[i]) + lam * float(values[i, index[i, t]])
            assert abs(float(got[i, t]) - want) < 1e-5, (i, t)


def test_each_token_credit_estimator_is_the_core_with_its_values():
    """ps with mode `step`, vps and tree reduce to segment_credit with the values they state."""
    outcome = torch.tensor([1.0, -0.5])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    index = torch.tensor([[0, 1, 1, -1], [0, 0, 1, 2]])
    values = torch.tensor([[0.2, -0.4, 0.0], [0.3, 0.1, -0.2]])
    core = lambda **kw: advantages.segment_credit(  # noqa: E731
        outcome_advantages=outcome, completion_mask=mask, segment_index=index, **kw
    )
    ps = ps_token_advantages(
        outcome_advantages=outcome, completion_mask=mask, step_advantages=values, segment_index=index,
        advantage_mode="step", outcome_weight=0.5, lambda_=2.0,
    )  # fmt: skip
    step_mask = torch.tensor([[1.0, 1, 0], [1, 1, 1]])
    assert torch.equal(ps, core(segment_values=values * step_mask, outcome_weight=0.5, lambda_=2.0))
    tree = tree_token_advantages(
        outcome_advantages=outcome, completion_mask=mask, segment_advantages=values, segment_index=index,
        outcome_weight=0.0, lambda_=1.5,
    )  # fmt: skip
    assert torch.equal(tree, core(segment_values=values, outcome_weight=0.0, lambda_=1.5))
    confidence = torch.tensor([[0.1, 0.4, float("nan")], [0.2, 0.3, 0.1]])
    vps = vps_token_advantages(
        outcome_advantages=outcome,
        completion_mask=mask,
        confidence=confidence,
        segment_index=index,
        alpha=1.2,
    )
    progress = torch.tensor([[0.3, 0.0, 0.0], [0.1, -0.2, 0.0]])  # ΔC for segments 0..K_i−1, else 0
    torch.testing.assert_close(vps, core(segment_values=progress, outcome_weight=1.0, lambda_=1.2))


def test_the_former_step_index_keyword_is_refused_with_the_new_name():
    import pytest

    kwargs = dict(
        outcome_advantages=torch.zeros(1), completion_mask=torch.ones(1, 2), step_index=torch.zeros(1, 2)
    )
    with pytest.raises(TypeError, match="step_index keyword is now segment_index"):
        ps_token_advantages(
            step_advantages=torch.zeros(1, 1), segment_index=torch.zeros(1, 2, dtype=torch.long), **kwargs
        )
    with pytest.raises(TypeError, match="now segment_index"):
        tree_token_advantages(
            segment_advantages=torch.zeros(1, 1), segment_index=torch.zeros(1, 2, dtype=torch.long), **kwargs
        )
    from psgrpo.ps.segmentation import spans_to_segment_index, spans_to_step_index

    assert spans_to_step_index is spans_to_segment_index  # the former name of an importable function
