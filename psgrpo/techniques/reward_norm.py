"""Running reward normalisation: exponential moving mean and std of the summed reward.

Each generation batch (all processes gathered, so every rank holds the same statistics) updates

    δ   = mean_b − μ
    μ  ← μ + (1 − m) · δ
    σ² ← m · σ² + (1 − m) · var_b + m (1 − m) · δ²

(the mean and variance of the mixture "old history with weight m, this batch with weight 1 − m";
the first batch initialises μ = mean_b, σ² = var_b, and so does every batch while σ² is still 0: batches of
equal rewards, common at the start with sparse success, carry no scale, and a σ² grown from 0 at rate 1 − m
would divide the first rewards that vary by a σ about ten times too small). The rewards are then replaced by
r̂ = (r − μ) / (σ + eps) before the group advantages A_i = (r̂_i − mean_group r̂) / scale are formed.

Note what survives the group advantage: subtracting μ cancels in every group, and with
``scale_rewards`` = ``group`` or ``batch`` the division by σ cancels too (up to TRL's 1e-4), so the
technique matters with ``scale_rewards="none"`` (Dr. GRPO style), where it gives A_i = (r_i − mean_group r) / σ:
a stable advantage scale over training without per-group std weighting.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from trl.trainer.utils import nanstd

from psgrpo.config.options import TrlScaleRewards, check_choice

EPS = 1e-4
"""Added to σ before dividing (TRL uses the same constant for its group std)."""


@dataclass
class RunningRewardStats:
    """EMA mean/variance of rewards; ``momentum`` m ∈ [0, 1) is the weight of the history."""

    momentum: float
    mean: float = 0.0
    var: float = 0.0
    updates: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"reward_norm_momentum must be in [0, 1), got {self.momentum}")

    @property
    def std(self) -> float:
        return self.var**0.5

    def update(self, rewards: torch.Tensor) -> None:
        """Fold one batch of rewards (N,) into the statistics; NaN entries (unscorable) are ignored."""
        values = rewards[~torch.isnan(rewards)].double()
        if values.numel() == 0:
            return
        batch_mean = values.mean().item()
        batch_var = values.var(unbiased=False).item()
        if self.updates == 0 or self.var == 0.0:  # no spread seen yet: nothing to average with
            self.mean, self.var = batch_mean, batch_var
        else:
            m = self.momentum
            delta = batch_mean - self.mean
            self.mean += (1.0 - m) * delta
            self.var = m * self.var + (1.0 - m) * batch_var + m * (1.0 - m) * delta**2
        self.updates += 1

    def normalize(self, rewards: torch.Tensor) -> torch.Tensor:
        """(r − μ) / (σ + eps), same shape and dtype as ``rewards``; NaN stays NaN."""
        return (rewards - self.mean) / (self.std + EPS)

    def state_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "var": self.var, "updates": self.updates}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.mean, self.var, self.updates = float(state["mean"]), float(state["var"]), int(state["updates"])


def weighted_rewards(rewards_per_func: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Summed reward (N,) from per-function rewards (N, F) and weights (F,), as TRL sums them.

    NaN entries (a function that skipped the sample) count as 0; a row where every function
    returned NaN (unscorable) stays NaN.
    """
    rewards = (rewards_per_func * weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
    rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
    return rewards


def group_advantages(rewards: torch.Tensor, num_generations: int, scale_rewards: str) -> torch.Tensor:
    """TRL's ``sum_then_normalize`` group advantage (N,) from summed rewards (N,), N = groups × G.

    A_i = r_i − mean_group(r), divided by (std + 1e-4) where std is the group's (``group``), the
    batch's (``batch``) or not at all (``none``). NaN rewards are left out of the statistics and
    get advantage 0. Matches ``trl.GRPOTrainer`` exactly (tested).
    """
    check_choice("scale_rewards", scale_rewards, TrlScaleRewards)
    grouped = rewards.view(-1, num_generations)
    advantages = rewards - torch.nanmean(grouped, dim=1).repeat_interleave(num_generations)
    if scale_rewards == "group":
        std = nanstd(grouped, dim=1).repeat_interleave(num_generations)
    elif scale_rewards == "batch":
        std = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
    if scale_rewards != "none":
        advantages = advantages / (std + EPS)
    return torch.nan_to_num(advantages, nan=0.0)
