"""The `ps` estimators (PS-GRPO): group step normalisation and the reward-to-go / step / min / pure_min token advantages."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.advantages import (
    ADVANTAGE_ESTIMATORS,
    PS_MODES,
    ps_token_advantages,
    pure_min_form,
    reward_to_go,
    soft_min_to_go,
)
from psgrpo.config.options import ProcessMode, allowed
from psgrpo.ps.signal import normalize_step_scores, step_tensors


@st.composite
def batches(draw):
    """Random completions: each a list of step lengths (tokens) and normalised step values."""
    rows = draw(st.integers(1, 4))
    steps = [draw(st.lists(st.integers(1, 4), min_size=0, max_size=4)) for _ in range(rows)]
    values = [[draw(st.integers(-8, 8)) / 4 for _ in row] for row in steps]
    pad = draw(st.integers(0, 3))
    return steps, values, pad


def build(steps, values, pad):
    spans = []
    for lengths in steps:
        ends = torch.tensor(lengths).cumsum(0).tolist() if lengths else []
        starts = [0, *ends[:-1]] if ends else []
        spans.append(list(zip(starts, ends, strict=True)))
    width = max([sum(lengths) for lengths in steps] + [1]) + pad
    tensors = step_tensors(values, spans, width, torch.device("cpu"))
    mask = (tensors.segment_index >= 0).long()
    return tensors, mask


def pure_min_paper(rewards: list[float], temperature: float) -> list[float]:
    """PURE's min-form return, written out with loops: w_j = exp(−r_j/T) / Σ_l exp(−r_l/T) over the
    trajectory's steps, G_k = Σ_{j≥k} w_j·r_j."""
    z = sum(math.exp(-r / temperature) for r in rewards)
    weights = [math.exp(-r / temperature) / z for r in rewards]
    return [sum(weights[j] * rewards[j] for j in range(k, len(rewards))) for k in range(len(rewards))]


def brute_force(steps, values, mode, outcome, w, lam, width, temperature=0.1):
    out = torch.zeros(len(steps), width)
    for i, (lengths, vals) in enumerate(zip(steps, values, strict=True)):
        t = 0
        for k, length in enumerate(lengths):
            future = vals[k:]
            if mode == "reward_to_go":
                proc = sum(future)
            elif mode == "step":
                proc = vals[k]
            elif mode == "pure_min":
                proc = pure_min_paper(vals, temperature)[k]
            else:
                weights = torch.softmax(-torch.tensor(future) / temperature, 0)
                proc = float((weights * torch.tensor(future)).sum())
            out[i, t : t + length] = w * outcome[i] + lam * proc
            t += length
    return out


@given(
    batches(),
    st.sampled_from(allowed(ProcessMode)),
    st.sampled_from([0.0, 1.0]),
    st.sampled_from([0.5, 1.0]),
)
@settings(max_examples=100, deadline=None)
def test_matches_brute_force_and_is_zero_on_padding(batch, mode, w, lam):
    steps, values, pad = batch
    tensors, mask = build(steps, values, pad)
    outcome = torch.linspace(-1, 1, len(steps))
    adv = ps_token_advantages(
        outcome_advantages=outcome,
        completion_mask=mask,
        step_advantages=tensors.step_advantages,
        segment_index=tensors.segment_index,
        advantage_mode=mode,
        outcome_weight=w,
        lambda_=lam,
    )
    assert adv.shape == mask.shape
    assert torch.all(adv[mask == 0] == 0)
    expected = brute_force(steps, values, mode, outcome.tolist(), w, lam, mask.shape[1])
    torch.testing.assert_close(adv, expected, atol=1e-5, rtol=1e-5)


@given(batches(), st.sampled_from(allowed(ProcessMode)))
@settings(max_examples=50, deadline=None)
def test_invariant_to_padding_length(batch, mode):
    steps, values, _ = batch
    short, short_mask = build(steps, values, 0)
    long, long_mask = build(steps, values, 5)
    outcome = torch.ones(len(steps))
    kwargs = dict(outcome_advantages=outcome, advantage_mode=mode)
    a = ps_token_advantages(
        completion_mask=short_mask,
        step_advantages=short.step_advantages,
        segment_index=short.segment_index,
        **kwargs,
    )
    b = ps_token_advantages(
        completion_mask=long_mask,
        step_advantages=long.step_advantages,
        segment_index=long.segment_index,
        **kwargs,
    )
    torch.testing.assert_close(b[:, : a.shape[1]], a)
    assert torch.all(b[:, a.shape[1] :] == 0)


def test_reward_to_go_hand_computed():
    values = torch.tensor([[1.0, -2.0, 0.5, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    torch.testing.assert_close(reward_to_go(values, mask), torch.tensor([[-0.5, -1.5, 0.5, 0.0]]))


def test_normalize_over_all_steps_of_the_group():
    scores = [[1.0, 0.0], [1.0], [0.5], [0.5, 0.5, 0.5]]
    out = normalize_step_scores(scores, num_generations=2)
    flat = torch.tensor([1.0, 0.0, 1.0])
    expected = ((flat - flat.mean()) / (flat.std() + 1e-4)).tolist()
    assert out[0] == pytest.approx(expected[:2]) and out[1] == pytest.approx(expected[2:])
    assert out[2:] == [[0.0], [0.0, 0.0, 0.0]]  # all steps score the same: no process advantage


def test_failed_completion_is_left_out_and_falls_back_to_outcome():
    out = normalize_step_scores([[1.0, 0.0], None], num_generations=2)
    assert out[1] is None and out[0] == pytest.approx([0.7070, -0.7070], abs=1e-3)
    tensors, mask = build([[2, 1], [3]], [out[0], None], 0)
    adv = ps_token_advantages(
        outcome_advantages=torch.tensor([0.5, -2.0]),
        completion_mask=mask,
        step_advantages=tensors.step_advantages,
        segment_index=tensors.segment_index,
        process_valid=tensors.process_valid,
        outcome_weight=0.0,
    )
    assert adv[1].tolist() == [-2.0, -2.0, -2.0]  # exactly A_i
    assert adv[0, 0] == pytest.approx(0.0, abs=1e-3) and adv[0, 2] == pytest.approx(-0.7070, abs=1e-3)


def test_errors():
    with pytest.raises(ValueError, match="groups of 3"):
        normalize_step_scores([[1.0]] * 4, num_generations=3)
    tensors, mask = build([[1]], [[1.0]], 0)
    with pytest.raises(ValueError, match="mode"):
        ps_token_advantages(
            outcome_advantages=torch.zeros(1),
            completion_mask=mask,
            step_advantages=tensors.step_advantages,
            segment_index=tensors.segment_index,
            advantage_mode="avg",
        )
    assert ADVANTAGE_ESTIMATORS.get("ps") is ps_token_advantages


def test_equal_step_scores_normalise_to_exact_zeros():
    """Seven steps of 0.7: the float mean is not exactly 0.7, yet nothing is preferred, so r̃ is exactly 0."""
    scores = [[0.7, 0.7, 0.7], [0.7], [0.7, 0.7, 0.7]]
    assert torch.tensor([0.7] * 7, dtype=torch.float64).std() > 0  # the pitfall: std of equal floats
    assert normalize_step_scores(scores, num_generations=3) == [[0.0] * 3, [0.0], [0.0] * 3]


# --------------------------------------------------------------------------------------------
# PURE's min-form and step-count neutrality

rows_of_rewards = st.lists(st.lists(st.floats(-3, 3), min_size=0, max_size=6), min_size=1, max_size=4)


def padded(rows: list[list[float]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max([len(row) for row in rows] + [1])
    values = torch.full((len(rows), width), 7.0, dtype=torch.float64)  # padding: any value
    mask = torch.zeros(len(rows), width, dtype=torch.float64)
    for i, row in enumerate(rows):
        values[i, : len(row)] = torch.tensor(row, dtype=torch.float64)
        mask[i, : len(row)] = 1
    return values, mask


@given(rows_of_rewards, st.floats(0.05, 2.0))
@settings(max_examples=100, deadline=None)
def test_pure_min_form_is_the_papers_formula(rows, temperature):
    values, mask = padded(rows)
    out = pure_min_form(values, mask, temperature)
    for i, row in enumerate(rows):
        assert out[i, : len(row)].tolist() == pytest.approx(pure_min_paper(row, temperature), abs=1e-9)
        assert torch.all(out[i, len(row) :] == 0)


def test_pure_min_form_limits():
    r = torch.tensor([[0.5, -1.0, 2.0, 1.0]])
    mask = torch.ones_like(r)
    cold = pure_min_form(r, mask, 1e-3)[0]
    # G_k → min over later steps while the trajectory's minimum (step 1) is still ahead, → 0 after it
    assert cold.tolist() == pytest.approx([-1.0, -1.0, 0.0, 0.0], abs=1e-6)
    # equal rewards r: G_k = r·(S − k + 1)/S, so the credit depends on the number of steps
    flat = pure_min_form(torch.full((1, 4), 2.0), torch.ones(1, 4), 0.1)[0]
    assert flat.tolist() == pytest.approx([2.0, 1.5, 1.0, 0.5])
    with pytest.raises(ValueError, match="temperature"):
        pure_min_form(r, mask, 0.0)


@given(rows_of_rewards, st.floats(0.05, 1.0))
@settings(max_examples=100, deadline=None)
def test_soft_min_is_within_its_count_bound_of_the_hard_min(rows, temperature):
    """min mode: 0 ≤ G_k − min_{j≥k} r̃_j ≤ (n_k − 1)·T/e, n_k the number of steps from k on. This is
    exactly how much re-counting the same work (splitting a step into many of the same score) can
    move the credit; with equal scores it moves nothing."""
    values, mask = padded(rows)
    out = soft_min_to_go(values, mask, temperature)
    for i, row in enumerate(rows):
        for k in range(len(row)):
            gap = out[i, k].item() - min(row[k:])
            assert -1e-9 <= gap <= (len(row) - k - 1) * temperature / math.e + 1e-9


@given(batches(), st.integers(0, 3), st.integers(2, 4), st.sampled_from(["step", "min"]))
@settings(max_examples=100, deadline=None)
def test_splitting_a_step_into_equal_steps_changes_no_token_advantage(batch, which, pieces, mode):
    """Writing more markers for the same work (a step cut into pieces that score the same) leaves every
    token's advantage as it was: exactly in ``step`` mode; in ``min`` mode when all the row's steps score
    the same (otherwise the earlier tokens move within the bound above)."""
    steps, values, _ = batch
    row = next((i for i, lengths in enumerate(steps) if lengths), None)
    if row is None:
        return
    k = which % len(steps[row])
    if mode == "min":  # every step of the row scores the same
        values = [list(v) for v in values]
        values[row] = [values[row][k]] * len(values[row])
    length = steps[row][k] * pieces  # the step, then the same tokens cut into `pieces` steps
    before = [list(s) for s in steps]
    before[row][k] = length
    after = [list(s) for s in steps]
    after[row][k : k + 1] = [steps[row][k]] * pieces
    after_values = [list(v) for v in values]
    after_values[row][k : k + 1] = [values[row][k]] * pieces
    outcome = torch.zeros(len(steps))
    advantages = []
    for lengths, vals in ((before, values), (after, after_values)):
        tensors, mask = build(lengths, vals, 0)
        advantages.append(
            ps_token_advantages(
                outcome_advantages=outcome,
                completion_mask=mask,
                step_advantages=tensors.step_advantages,
                segment_index=tensors.segment_index,
                advantage_mode=mode,
            )
        )
    torch.testing.assert_close(advantages[0], advantages[1], atol=1e-5, rtol=1e-5)


def test_every_ps_mode_is_registered_and_keeps_padding_at_zero():
    assert sorted(PS_MODES.names()) == sorted(allowed(ProcessMode))
    scores = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.7, -3.0]])  # row 1 has two real steps
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    for name in PS_MODES:
        credit = PS_MODES.get(name)(scores, mask, 0.1)
        assert credit.shape == (2, 3)
        assert credit[1, 2] == 0.0
    torch.testing.assert_close(PS_MODES.get("step")(scores, mask, 0.1), scores * mask)
    torch.testing.assert_close(
        PS_MODES.get("reward_to_go")(scores, mask, 0.1)[0], torch.tensor([1.5, 1.0, 2.0])
    )


@pytest.mark.parametrize("padding", [math.nan, math.inf, -math.inf])
def test_every_ps_mode_reads_nothing_from_the_padding(padding):
    """The modes' contract, "any value where step_mask is 0": a NaN there (a product would make NaN · 0 = NaN,
    and reward_to_go's cumulative sum would carry it to every real step) changes no credit."""
    scores = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.7, -3.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    dirty = scores.clone()
    dirty[1, 2] = padding
    for name in PS_MODES:
        torch.testing.assert_close(
            PS_MODES.get(name)(dirty, mask, 0.1), PS_MODES.get(name)(scores, mask, 0.1)
        )
