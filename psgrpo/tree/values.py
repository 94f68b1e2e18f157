"""The tree's values and segments: pure tensor functions of the leaves' rewards and the branching factors.

A group of G completions sampled as a tree (:mod:`psgrpo.tree.sampling`) has depth D =
``len(branching)`` and G = b_0·b_1·…·b_{D−1} leaves, numbered 0..G−1 in depth-first order. Leaf j's
node at level k (0-based; level 0 = the roots, level D−1 = the leaves) is ``j // stride_k`` with
stride_k = b_{k+1}·…·b_{D−1}, so the leaves under one node are consecutive rows. The node of level k
holds segment k of its leaves: completion tokens [k·S, (k+1)·S) for k < D−1 (S =
``tree_segment_tokens``) and everything from (D−1)·S on for the last level.

V(node) is the mean outcome reward of the leaves below it; V(prompt) is the group's mean reward.
Formulas and cost: docs/tree.md.
"""

from __future__ import annotations

import math

import torch
from trl.trainer.utils import nanstd

from psgrpo.techniques.reward_norm import weighted_rewards

EPS = 1e-4
"""TRL's ``+ 1e-4`` in A_i = (r_i − mean) / (std + 1e-4)."""


def tree_strides(branching: list[int]) -> list[int]:
    """stride_k = b_{k+1}·…·b_{D−1}: the number of leaves under one node of level k (the last is 1)."""
    return [math.prod(branching[k + 1 :]) for k in range(len(branching))]


def tree_path_values(rewards: torch.Tensor, branching: list[int]) -> torch.Tensor:
    """V along each leaf's path: the prompt, then its node at every level.

    Args:
        rewards: (N,) outcome rewards of the leaves, N = groups × G, each group G consecutive rows in
            depth-first leaf order; NaN = unscorable (left out of every mean, as TRL leaves it out of
            the group mean).
        branching: [b_0, …, b_{D−1}], product G.

    Returns:
        (N, D + 1): column 0 is V(prompt) = nanmean of the group's rewards, column k + 1 is V of the
        row's node at level k = nanmean of the rewards of the stride_k leaves below it (column D is
        the row's own reward). NaN where every leaf below is unscorable.
    """
    group = math.prod(branching)
    if rewards.dim() != 1 or rewards.numel() % group:
        raise ValueError(
            f"tree_path_values needs (N,) rewards with N a multiple of the group size {group} "
            f"(branching {branching}); got shape {tuple(rewards.shape)}"
        )
    columns = [torch.nanmean(rewards.view(-1, group), dim=1).repeat_interleave(group)]
    for stride in tree_strides(branching):
        columns.append(torch.nanmean(rewards.view(-1, stride), dim=1).repeat_interleave(stride))
    return torch.stack(columns, dim=1)


def segment_value_gains(path_values: torch.Tensor) -> torch.Tensor:
    """ΔV_k = V(node_k) − V(parent_k) per row and level, 0 where either value is NaN.

    Args:
        path_values: (N, D + 1) from :func:`tree_path_values`.

    Returns:
        (N, D), in reward units.
    """
    delta = path_values[:, 1:] - path_values[:, :-1]
    return torch.nan_to_num(delta, nan=0.0)


def scaled_gains(path_values: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The segment advantages the ``tree`` estimator takes: ΔV_k / σ, 0 where that is not finite.

    A group with one scorable leaf has no std (NaN): TRL's A_i is then 0, and so is every ΔV/σ.

    Args:
        path_values: (N, D + 1) from :func:`tree_path_values`.
        scale: (N,) from :func:`reward_scale`.

    Returns:
        (N, D).
    """
    return torch.nan_to_num(segment_value_gains(path_values) / scale.unsqueeze(1), nan=0.0)


def outcome_rewards(
    rewards_per_func: torch.Tensor,
    reward_weights: torch.Tensor,
    num_generations: int,
    aggregation: str = "sum_then_normalize",
) -> torch.Tensor:
    """The rewards r_i TRL builds A_i from (N,), NaN for unscorable rows.

    ``sum_then_normalize``: the weighted sum of the reward functions (NaN entries count 0).
    ``normalize_then_sum``: each function's rewards normalised per group first, as TRL does.

    Args:
        rewards_per_func: (N, F) every process's rows; NaN = the function skipped the row.
        reward_weights: (F,) TRL's ``reward_weights``.
        num_generations: G.
        aggregation: TRL's ``multi_objective_aggregation``.
    """
    if aggregation == "sum_then_normalize":
        return weighted_rewards(rewards_per_func, reward_weights)
    unscorable = torch.isnan(rewards_per_func).all(dim=1)
    grouped = rewards_per_func.view(-1, num_generations, rewards_per_func.shape[1])
    mean = torch.nanmean(grouped, dim=1, keepdim=True)
    std = nanstd(grouped, dim=1, keepdim=True) if num_generations > 1 else torch.zeros_like(mean)
    normalized = ((grouped - mean) / (std + EPS)).view(-1, rewards_per_func.shape[1])
    rewards = (normalized * reward_weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    rewards[unscorable] = torch.nan
    return rewards


def reward_scale(
    rewards: torch.Tensor,
    num_generations: int,
    scale_rewards: str,
    aggregation: str = "sum_then_normalize",
) -> torch.Tensor:
    """The denominator TRL divides r_i − mean by to get A_i, per row (N,).

    std + 1e-4 with the group's std (``scale_rewards='group'``) or the batch's (``'batch'``, and always with
    ``normalize_then_sum``); 1 with ``'none'`` (A_i stays in reward units, and so does the tree's ΔV).
    """
    if aggregation == "normalize_then_sum" or scale_rewards == "batch":
        std = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
        return std + EPS
    if scale_rewards == "none":
        return torch.ones_like(rewards)
    if num_generations == 1:
        return torch.full_like(rewards, EPS)
    return nanstd(rewards.view(-1, num_generations), dim=1).repeat_interleave(num_generations) + EPS


def segment_index(lengths: list[int], width: int, depth: int, segment_tokens: int) -> torch.Tensor:
    """The tree level of every completion token: min(t // S, D − 1), −1 on padding.

    Args:
        lengths: each row's completion length (tokens, EOS included).
        width: T, the padded completion width.
        depth: D.
        segment_tokens: S.

    Returns:
        (B, T) long.
    """
    positions = torch.arange(width)
    levels = (positions // segment_tokens).clamp(max=depth - 1).expand(len(lengths), width).clone()
    levels[positions.unsqueeze(0) >= torch.tensor(lengths).unsqueeze(1)] = -1
    return levels


def inner_ends(length: int, depth: int, segment_tokens: int) -> list[int]:
    """The D − 1 inner segment ends of a completion cut every S tokens: min((k + 1)·S, length), k < D − 1."""
    return [min((k + 1) * segment_tokens, length) for k in range(depth - 1)]


def segment_spans(ends: list[int], length: int) -> list[tuple[int, int]]:
    """A completion's non-empty segments as ``(level, end)`` pairs, ``end`` exclusive, in tokens.

    Args:
        ends: its D − 1 inner segment ends (non-decreasing; segment k is [ends[k−1], ends[k]), the last level
            runs from ends[−1] to ``length``); a node that ended early repeats its length.
        length: the completion's length.
    """
    closes = [*ends, length]
    starts = [0, *closes[:-1]]
    return [(k, end) for k, (start, end) in enumerate(zip(starts, closes, strict=True)) if end > start]


def segment_index_from_ends(ends: list[list[int]], lengths: list[int], width: int) -> torch.Tensor:
    """The tree level of every completion token from each row's inner segment ends, −1 on padding.

    Token t is in level #{k : ends[k] ≤ t} (so [0, ends[0]) is level 0, and from ends[−1] on the last
    level); :func:`segment_index` is the case ends = :func:`inner_ends`.

    Args:
        ends: per row, its D − 1 inner segment ends (tokens, non-decreasing).
        lengths: each row's completion length.
        width: T.

    Returns:
        (B, T) long.
    """
    positions = torch.arange(width)
    bounds = torch.tensor(ends, dtype=torch.long).reshape(
        len(lengths), len(ends[0]) if ends else 0
    )  # (B, D − 1)
    levels = (bounds.unsqueeze(1) <= positions.view(1, -1, 1)).sum(-1)  # (B, T)
    levels[positions.unsqueeze(0) >= torch.tensor(lengths).unsqueeze(1)] = -1
    return levels
