"""Tests for psgrpo.diagnostics.measures: AUC, advantage and reward shares, group correctness, boundary places."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from psgrpo.advantages import ps_token_advantages, vps_token_advantages
from psgrpo.diagnostics.measures import (
    BOUNDARY_PLACES,
    boundary_place,
    boundary_places,
    group_correctness,
    number_safe_cuts,
    place_shares,
    process_share,
    reward_parts,
    reward_shares,
    signal_quality,
    unnecessary_step_share,
)
from psgrpo.ps.segmentation import token_offsets
from psgrpo.techniques.reward_norm import group_advantages
from psgrpo.vps.boundaries import select_boundaries

# --------------------------------------------------------------------------- signal_quality


def test_auc_hand_computed():
    # wrong: 0.1, 0.5; correct: 0.2, 0.5, 0.9 → pairs: (0.1 < all three) = 3, (0.5 vs 0.2: 0, vs 0.5: ½, vs 0.9: 1)
    quality = signal_quality([0.1, 0.2, 0.5, 0.5, 0.9], [True, False, True, False, False])
    assert quality.auc == pytest.approx(4.5 / 6)
    assert quality.mean_wrong == pytest.approx(0.3) and quality.mean_correct == pytest.approx(1.6 / 3)
    assert (quality.n_wrong, quality.n_correct) == (2, 3)


def test_auc_perfect_reversed_and_all_tied():
    assert signal_quality([-1, -2, 3, 4], [True, True, False, False]).auc == 1.0
    assert signal_quality([5, 6, 0, 1], [True, True, False, False]).auc == 0.0
    assert signal_quality([0.0] * 5, [True, False, False, True, False]).auc == 0.5


@given(
    data=st.lists(st.tuples(st.integers(-5, 5).map(float), st.booleans()), min_size=2, max_size=40).filter(
        lambda rows: 0 < sum(w for _, w in rows) < len(rows)
    )
)
@settings(max_examples=200, deadline=None)
def test_auc_equals_pairwise_count(data):
    signal, wrong = [v for v, _ in data], [w for _, w in data]
    bad = [v for v, w in data if w]
    good = [v for v, w in data if not w]
    pairs = sum(1.0 if g > b else 0.5 if g == b else 0.0 for b in bad for g in good)
    assert signal_quality(signal, wrong).auc == pytest.approx(pairs / (len(bad) * len(good)))


@given(
    data=st.lists(st.tuples(st.integers(-1000, 1000), st.booleans()), min_size=2, max_size=30).filter(
        lambda rows: 0 < sum(w for _, w in rows) < len(rows)
    ),
    scale=st.integers(1, 50),
)
@settings(max_examples=100, deadline=None)
def test_auc_ignores_monotone_transforms(data, scale):
    signal, wrong = [float(v) for v, _ in data], [w for _, w in data]
    transformed = [
        math.exp(v / 1000) * scale for v in signal
    ]  # strictly increasing, no float collisions here
    assert signal_quality(transformed, wrong).auc == pytest.approx(signal_quality(signal, wrong).auc)


def test_signal_quality_errors():
    with pytest.raises(ValueError, match="3 signal values for 2 labels"):
        signal_quality([1, 2, 3], [True, False])
    with pytest.raises(ValueError, match=r"signal\[1\] = nan is not finite"):
        signal_quality([1, math.nan], [True, False])
    with pytest.raises(ValueError, match="got 0 wrong and 2 correct"):
        signal_quality([1, 2], [False, False])


# --------------------------------------------------------------------------- process_share


def test_process_share_hand_computed():
    token = torch.tensor([[1.5, 0.5, 0.0], [-1.0, -1.0, 0.0]])
    outcome = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1, 1, 0], [1, 1, 0]])
    # process parts: 0.5, -0.5, 0, 0 → 1.0; outcome parts: 1, 1, 1, 1 → 4.0
    assert process_share(token, outcome, mask) == pytest.approx(1.0 / 5.0)


def test_process_share_is_zero_for_outcome_and_nan_without_advantage():
    outcome = torch.tensor([0.7, -0.7])
    mask = torch.ones(2, 4)
    assert process_share(outcome[:, None] * mask, outcome, mask) == 0.0
    assert math.isnan(process_share(torch.zeros(2, 4), torch.zeros(2), mask))


def test_process_share_of_real_estimators():
    outcome = torch.tensor([1.0, -1.0])
    mask = torch.ones(2, 4)
    segment_index = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 1]])
    confidence = torch.tensor([[0.1, 0.6], [0.5, 0.25]])  # ΔC = +0.5, −0.25 on the first two tokens
    vps = vps_token_advantages(
        outcome_advantages=outcome,
        completion_mask=mask,
        confidence=confidence,
        segment_index=segment_index,
        alpha=2.0,
    )
    # process: 2·0.5·2 tokens + 2·0.25·2 tokens = 3; outcome: 8 tokens of |1| = 8
    assert process_share(vps, outcome, mask) == pytest.approx(3 / 11)
    ps = ps_token_advantages(
        outcome_advantages=outcome,
        completion_mask=mask,
        step_advantages=torch.tensor([[1.0, -1.0], [0.5, 0.5]]),
        segment_index=segment_index,
        advantage_mode="step",
        outcome_weight=0.5,
    )
    # process |r̃| per token: 1,1,1,1,.5,.5,.5,.5 = 6; outcome 0.5 × 8 = 4
    assert process_share(ps, outcome, mask, outcome_weight=0.5) == pytest.approx(6 / 10)


def test_process_share_shape_error():
    with pytest.raises(ValueError, match=r"must be \(N, T\), \(N, T\) and \(N,\)"):
        process_share(torch.zeros(2, 3), torch.zeros(3), torch.ones(2, 3))


# --------------------------------------------------------------------------- reward_shares


def test_reward_shares_hand_computed_unscaled():
    rewards = torch.tensor([[2.0, 0.8], [0.0, 0.8], [0.0, 0.6], [0.0, 0.8]])
    shares = reward_shares(rewards, 4, ["correctness", "format"], scale="none")
    # correctness centred: 1.5, -0.5, -0.5, -0.5 → 3.0; format centred: .05, .05, -.15, .05 → 0.3
    assert shares["correctness"] == pytest.approx(3.0 / 3.3)
    assert shares["format"] == pytest.approx(0.3 / 3.3)


def test_format_only_groups_are_all_format():
    rewards = torch.tensor([[0.0, 0.8], [0.0, 0.6], [2.0, 0.8], [2.0, 0.8]])
    assert reward_shares(rewards, 2, ["correctness", "format"]) == {"correctness": 0.0, "format": 1.0}


@given(
    values=st.lists(st.sampled_from([0.0, 0.2, 0.4, 0.6, 0.8, 1.5, 2.0]), min_size=12, max_size=12),
    weights=st.tuples(st.floats(0.1, 3.0), st.floats(0.1, 3.0)),
    scale=st.sampled_from(["group", "batch", "none"]),
)
@settings(max_examples=100, deadline=None)
def test_reward_parts_add_up_to_trl_advantages(values, weights, scale):
    """The parts a_{f,i} sum to A_i as psgrpo/TRL compute it from the weighted total."""
    rewards = torch.tensor(values, dtype=torch.float64).view(6, 2)
    total = (rewards * torch.tensor(weights, dtype=torch.float64)).sum(1)
    parts = reward_parts(rewards, 3, weights=weights, scale=scale)
    assert torch.allclose(parts.sum(1), group_advantages(total, 3, scale), atol=1e-9)
    shares = reward_shares(rewards, 3, ["a", "b"], weights=weights, scale=scale)
    if parts.abs().sum() > 0:
        assert sum(shares.values()) == pytest.approx(1.0)
        assert all(0.0 <= s <= 1.0 for s in shares.values())
    else:
        assert all(math.isnan(s) for s in shares.values())


def trl_advantages(rewards_per_func, weights, g, scale, aggregation):
    """trl 1.16 GRPOTrainer._compute_advantages' arithmetic (sum_then_normalize / normalize_then_sum), float64."""
    from trl.trainer.utils import nanstd

    w = torch.tensor(weights, dtype=torch.float64)
    unscorable = torch.isnan(rewards_per_func).all(dim=1)
    if aggregation == "sum_then_normalize":
        rewards = (rewards_per_func * w).nansum(dim=1)
        rewards[unscorable] = torch.nan
        mean = torch.nanmean(rewards.view(-1, g), dim=1).repeat_interleave(g)
        std = nanstd(rewards.view(-1, g), dim=1).repeat_interleave(g) if scale != "batch" else nanstd(rewards)
        advantages = rewards - mean
        if scale != "none":
            advantages = advantages / (std + 1e-4)
    else:
        grouped = rewards_per_func.view(-1, g, rewards_per_func.shape[1])
        reward_k = (grouped - torch.nanmean(grouped, dim=1, keepdim=True)) / (
            nanstd(grouped, dim=1, keepdim=True) + 1e-4
        )
        rewards = (reward_k.view(-1, rewards_per_func.shape[1]) * w).nansum(dim=1)
        rewards[unscorable] = torch.nan
        advantages = (rewards - torch.nanmean(rewards)) / (nanstd(rewards) + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0)


@given(
    values=st.lists(st.sampled_from([0.0, 0.2, 0.8, 2.0, math.nan]), min_size=16, max_size=16),
    weights=st.tuples(st.floats(0.1, 3.0), st.floats(0.1, 3.0)),
    scale=st.sampled_from(["group", "batch", "none"]),
    aggregation=st.sampled_from(["sum_then_normalize", "normalize_then_sum"]),
)
@settings(max_examples=200, deadline=None)
def test_reward_parts_add_up_to_trls_advantages_with_skipped_rewards_and_either_aggregation(
    values, weights, scale, aggregation
):
    """A skipped reward (NaN, a function's None) counts 0 in its row; a row every function skipped is left out
    of the statistics and gets 0; normalize_then_sum normalises each function per group first. The parts used
    to read NaN as a reward of 0 and to know only sum_then_normalize (a review, 2026-12-07)."""
    rewards = torch.tensor(values, dtype=torch.float64).view(8, 2)
    parts = reward_parts(rewards, 4, weights=weights, scale=scale, aggregation=aggregation)
    expected = trl_advantages(rewards, weights, 4, scale, aggregation)
    assert torch.allclose(parts.sum(1), expected, atol=1e-8)


def test_group_correctness_leaves_out_completions_the_reward_skipped():
    result = group_correctness([True, True, True, None, False, None, False, False], 4)
    assert (result.all_right, result.all_wrong, result.all_equal) == (0.5, 0.5, 1.0)


def test_reward_shares_errors():
    with pytest.raises(ValueError, match="1 names for 2 reward functions"):
        reward_shares(torch.zeros(4, 2), 2, ["a"])
    with pytest.raises(ValueError, match="groups of num_generations=3"):
        reward_shares(torch.zeros(4, 2), 3, ["a", "b"])
    with pytest.raises(
        ValueError, match="scale='std' is not allowed; choose one of 'group', 'batch', 'none'"
    ):
        reward_shares(torch.zeros(4, 2), 2, ["a", "b"], scale="std")


# --------------------------------------------------------------------------- group_correctness


def test_group_correctness_hand_computed():
    flags = [False, False, True, False, True, True, False, False]
    result = group_correctness(flags, 2)
    assert (result.all_wrong, result.all_right, result.all_equal, result.groups) == (0.5, 0.25, 0.75, 4)


@given(flags=st.lists(st.booleans(), min_size=1, max_size=40), g=st.integers(1, 5))
@settings(max_examples=100, deadline=None)
def test_group_correctness_shares_are_consistent(flags, g):
    flags = flags[: len(flags) // g * g]
    if not flags:
        return
    result = group_correctness(flags, g)
    assert result.all_equal == pytest.approx(result.all_wrong + result.all_right)
    assert result.groups == len(flags) // g
    if g == 1:
        assert result.all_equal == 1.0


def test_group_correctness_error_names_the_group_size():
    with pytest.raises(ValueError, match="3 completions do not split into groups of num_generations=2"):
        group_correctness([True, False, True], 2)


# --------------------------------------------------------------------------- boundary places

SOLUTION = "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9\n</reasoning>\n<answer>9</answer>"
STEP_ENDS = [SOLUTION.index("Step 2"), SOLUTION.index("</reasoning>")]


@pytest.mark.parametrize(
    ("prefix", "place"),
    [
        ("<reasoning>\nStep 1: 7 + 5 = 1", "inside_number"),
        ("<reasoning>\nStep 1: 7 + 5 = 12", "step_end"),
        ("<reasoning>\nStep 1: 7 + 5 = 12\n", "step_end"),
        ("<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 12 - 3 = 9\n", "step_end"),
        ("<reasoning>", "line_end"),
        ("<reasoning>\n", "line_end"),
        ("<reasoning>\nStep 1: 7 + ", "elsewhere"),
        ("<reasoning>\nSte", "elsewhere"),
    ],
)
def test_boundary_place_examples(prefix, place):
    assert SOLUTION.startswith(prefix)
    assert boundary_place(SOLUTION, len(prefix), STEP_ENDS) == place


def test_step_ends_are_line_ends_without_step_ends():
    assert boundary_place(SOLUTION, STEP_ENDS[0]) == "line_end"
    with pytest.raises(ValueError, match="outside the text"):
        boundary_place(SOLUTION, len(SOLUTION) + 1)


def test_boundary_places_of_tokens_and_shares(char_tokenizer):
    ids = char_tokenizer(SOLUTION, add_special_tokens=False)["input_ids"]
    text, offsets = token_offsets(char_tokenizer, ids)
    assert text == SOLUTION
    one = [end for _, end in offsets].index(SOLUTION.index("= 12") + 3)  # the "1" of "12" in step 1
    places = boundary_places(text, offsets, [0, one, one + 1, one + 2], STEP_ENDS)
    assert places == ["line_end", "inside_number", "step_end", "step_end"]
    assert place_shares(places) == {
        "inside_number": 0.25,
        "step_end": 0.5,
        "line_end": 0.25,
        "elsewhere": 0.0,
    }
    assert place_shares([]) == dict.fromkeys(BOUNDARY_PLACES, 0.0)
    with pytest.raises(ValueError, match="unknown boundary places"):
        place_shares(["middle"])


def test_number_safe_cuts_move_entropy_cuts_out_of_numbers(char_tokenizer):
    ids = char_tokenizer(SOLUTION, add_special_tokens=False)["input_ids"]
    text, offsets = token_offsets(char_tokenizer, ids)
    safe = number_safe_cuts(text, offsets)
    assert all(boundary_place(text, offsets[t][1]) != "inside_number" for t in safe)
    assert len(safe) == len(ids) - 2  # "12" twice: the cuts after their "1"
    entropies = torch.zeros(len(ids))
    inside = [t for t in range(len(ids)) if t not in safe]
    entropies[inside] = 5.0  # the most uncertain tokens are inside numbers
    cuts = select_boundaries(entropies, max_segments=3, min_segment_tokens=2, snap_positions=safe)
    assert cuts and all(boundary_place(text, offsets[b][1]) != "inside_number" for b in cuts)
    unsnapped = select_boundaries(entropies, max_segments=3, min_segment_tokens=2)
    assert all(boundary_place(text, offsets[b][1]) == "inside_number" for b in unsnapped)


# --------------------------------------------------------------------------- unnecessary steps


def test_unnecessary_step_share_counts_the_distractor_step():
    with_distractor = "<reasoning>\nStep 1: 7 + 5 = 12\nStep 2: 6 + 3 = 9\nStep 3: 12 - 2 = 10\n</reasoning>\n<answer>10</answer>"
    assert unnecessary_step_share([with_distractor]) == pytest.approx(1 / 3)
    assert unnecessary_step_share([with_distractor, SOLUTION]) == pytest.approx(1 / 5)
    assert unnecessary_step_share([SOLUTION]) == 0.0
    assert math.isnan(unnecessary_step_share(["<answer>3</answer>", ""]))


def test_unnecessary_step_share_of_generated_distractor_solutions():
    from psgrpo.data.arith import make_arith_dataset

    rows = make_arith_dataset("test", n=100, variant="arith-distractor")
    lines = sum(len(c.split("\n")) - 3 for c in rows["completion"])
    extra = lines - sum(rows["difficulty"])  # the computed distractor steps
    assert extra > 0
    assert unnecessary_step_share(list(rows["completion"])) == pytest.approx(extra / lines)
