"""The ``tree`` method's process signal: the tree's values V and each segment's gain ΔV, for the ``tree`` estimator.

One training step, inside :class:`TreeSignal` (formulas in docs/tree.md)::

    leaves' rewards r (all processes, as TRL summed them) ──► V(prompt), V(node) per level ──► ΔV_k / σ
    each leaf's inner segment ends (every S tokens, or where sampling cut at a line end)
        ──► level of every token                                      ──► the ``tree`` estimator

No forward pass and no scorer: the credit comes from the group's own outcomes. In evaluation (and
wherever the group size is not the tree's) the group is a one-level tree [G], whose credit is A_i.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from psgrpo.credit import SignalOutput
from psgrpo.distributed import local_rows
from psgrpo.tree.values import (
    inner_ends,
    outcome_rewards,
    reward_scale,
    scaled_gains,
    segment_index_from_ends,
    tree_path_values,
    tree_strides,
)


@dataclass
class TreeCredit:
    """What the tree credited, per local completion (read by ``psgrpo inspect``).

    Attributes:
        branching: the tree's branching factors for this batch ([G] in evaluation).
        path_values: (B, D + 1) V(prompt), V(node_0), …, V(node_{D−1}) = r_i, in reward units.
        segment_advantages: (B, D) ΔV_k / σ as the estimator received it.
        segment_ends: per row, its D − 1 inner segment ends in tokens (segment k is [ends[k−1], ends[k])).
    """

    branching: list[int]
    path_values: torch.Tensor
    segment_advantages: torch.Tensor
    segment_ends: list[list[int]]


class TreeSignal:
    """The ``tree`` signal stage (see the module docstring); one instance per trainer.

    Args:
        config: the :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig` (``tree_*`` options, ``scale_rewards``,
            ``multi_objective_aggregation``).
        accelerator: the trainer's ``Accelerator`` (groups may span processes in evaluation).
        rewards_per_func: returns the last batch's (N, F) rewards of every process (the trainer's
            ``step_record.rewards_per_func``).
        reward_weights: (F,) TRL's reward weights.
        sampled_ends: returns (and forgets) the inner segment ends tree sampling recorded for the local rows of
            the batch it sampled (``tree_boundaries`` 'lines' and 'entropy' need them; 'tokens' recomputes them from S).
    """

    def __init__(
        self,
        config: Any,
        accelerator: Any,
        rewards_per_func: Callable[[], torch.Tensor],
        reward_weights: torch.Tensor,
        sampled_ends: Callable[[], list[list[int]] | None] = lambda: None,
    ) -> None:
        self.config, self.accelerator = config, accelerator
        self.rewards_per_func, self.reward_weights = rewards_per_func, reward_weights
        self.sampled_ends = sampled_ends

    def branching_for(self, num_generations: int, training: bool) -> list[int]:
        """The configured tree in training (:mod:`psgrpo.tree.sampling` sampled it), else the one-level tree [G]."""
        branching = list(self.config.tree_branching)
        return branching if training and math.prod(branching) == num_generations else [num_generations]

    def __call__(
        self,
        model: Any,
        output: dict[str, Any],
        inputs: list[dict[str, Any]],
        num_generations: int,
        step: int,
    ) -> SignalOutput:
        config = self.config
        branching = self.branching_for(num_generations, model.training)
        aggregation = config.multi_objective_aggregation
        rewards = outcome_rewards(self.rewards_per_func(), self.reward_weights, num_generations, aggregation)
        values = tree_path_values(rewards, branching)  # (N, D + 1), every process's rows
        scale = reward_scale(rewards, num_generations, config.scale_rewards, aggregation)
        gains = scaled_gains(values, scale)  # (N, D) ΔV_k / σ
        completion_mask = output["completion_mask"]
        rows = local_rows(self.accelerator, completion_mask.shape[0])
        device = completion_mask.device
        lengths = completion_mask.sum(1).tolist()
        ends = self.segment_ends(lengths, branching)
        levels = segment_index_from_ends(ends, lengths, completion_mask.shape[1])
        local_gains = gains[rows].to(device)
        return SignalOutput(
            estimator_kwargs={
                "segment_advantages": local_gains,
                "segment_index": levels.to(device),
                "scorable": ~torch.isnan(rewards[rows]).to(device),
            },  # the tree_* options are bound to the estimator once (psgrpo.methods.estimator_options)
            metrics=tree_metrics(values, gains, branching),
            credit=TreeCredit(branching, values[rows].detach(), local_gains.detach(), ends),
        )

    def segment_ends(self, lengths: list[int], branching: list[int]) -> list[list[int]]:
        """Each local row's D − 1 inner segment ends: as sampling cut them ('lines', 'entropy'), or every S tokens."""
        sampled = self.sampled_ends()
        if self.config.tree_boundaries != "tokens" and len(branching) > 1:
            if sampled is None or len(sampled) != len(lengths):
                raise RuntimeError(
                    f"tree_boundaries={self.config.tree_boundaries!r} needs the segment ends tree sampling recorded for these "
                    f"{len(lengths)} completions (got {None if sampled is None else len(sampled)}): the batch "
                    "was not sampled as a tree by this trainer"
                )
            return [[min(end, n) for end in row] for row, n in zip(sampled, lengths, strict=True)]
        return [inner_ends(n, len(branching), self.config.tree_segment_tokens or 1) for n in lengths]


def tree_metrics(path_values: torch.Tensor, gains: torch.Tensor, branching: list[int]) -> dict[str, float]:
    """Whole-batch statistics of the tree's credit (already over all processes' rows).

    ``tree/depth``; ``tree/abs_gain_level_k``: mean |ΔV_k / σ| of level k over the scorable leaves (how much
    credit each level gives; an unscorable leaf gets none); ``tree/split_node_frac``: the share of nodes with
    ≥ 2 leaves whose scorable leaves' rewards differ, i.e. the branchings that carry a signal.
    """
    metrics = {"tree/depth": float(len(branching))}
    rewards = path_values[:, -1]
    scorable = ~torch.isnan(rewards)
    for level in range(gains.shape[1]):
        kept = gains[scorable, level].abs()
        metrics[f"tree/abs_gain_level_{level}"] = kept.mean().item() if kept.numel() else 0.0
    split, nodes = 0, 0
    for stride in [math.prod(branching), *tree_strides(branching)[:-1]]:  # the prompt, then the inner levels
        if stride < 2:
            continue
        grouped = rewards.view(-1, stride)
        high = grouped.nan_to_num(nan=-math.inf).amax(1)  # NaN (unscorable) leaves left out of the spread
        low = grouped.nan_to_num(nan=math.inf).amin(1)
        spread = torch.nan_to_num(high - low, nan=0.0, neginf=0.0, posinf=0.0)
        split += int((spread > 0).sum())
        nodes += grouped.shape[0]
    metrics["tree/split_node_frac"] = split / nodes if nodes else 0.0
    return metrics
