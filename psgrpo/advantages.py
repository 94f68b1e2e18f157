"""Advantage estimators: pure tensor functions in a registry (the veRL ``core_algos`` pattern).

The trainer never computes advantages itself: it looks an estimator up by name and calls it
with keyword arguments. Every estimator returns **token** advantages of shape (B, T), zero on
padding, which TRL's ``GRPOTrainer._compute_loss`` consumes directly.

Keyword arguments every estimator receives:

- ``outcome_advantages`` (B,): the group-normalised outcome advantage A_i that TRL computed
  for the local completions (DESIGN.md §2, "Outcome GRPO").
- ``completion_mask`` (B, T): 1 on completion tokens, 0 on right padding.

Process estimators (PS-GRPO, GRPO-VPS) receive their own signals as further keywords and
ignore what they do not need (hence ``**_``).

Register a new one with::

    @register_advantage_estimator("my_estimator")
    def my_estimator(*, outcome_advantages, completion_mask, **_): ...
"""

from __future__ import annotations

from collections.abc import Callable

import torch

AdvantageEstimator = Callable[..., torch.Tensor]

ADVANTAGE_ESTIMATORS: dict[str, AdvantageEstimator] = {}

METHOD_ESTIMATORS: dict[str, str] = {"grpo": "outcome", "ps": "process", "vps": "hybrid"}
"""The estimator each method uses unless ``advantage_estimator`` overrides it."""


def register_advantage_estimator(name: str) -> Callable[[AdvantageEstimator], AdvantageEstimator]:
    """Decorator: add ``fn`` to :data:`ADVANTAGE_ESTIMATORS` under ``name`` (names are unique)."""

    def decorator(fn: AdvantageEstimator) -> AdvantageEstimator:
        if name in ADVANTAGE_ESTIMATORS and ADVANTAGE_ESTIMATORS[name] is not fn:
            raise ValueError(f"an advantage estimator named {name!r} is already registered")
        ADVANTAGE_ESTIMATORS[name] = fn
        return fn

    return decorator


def get_advantage_estimator(name: str) -> AdvantageEstimator:
    """Look an estimator up by name; the error lists the registered ones."""
    try:
        return ADVANTAGE_ESTIMATORS[name]
    except KeyError:
        raise ValueError(
            f"unknown advantage estimator {name!r}; registered: {sorted(ADVANTAGE_ESTIMATORS)}"
        ) from None


def group_normalize(
    values: torch.Tensor, num_generations: int, scale: str = "group", eps: float = 1e-4
) -> torch.Tensor:
    """Group-relative advantages of per-completion values, exactly as TRL computes them.

    Args:
        values: (N,) one value per completion, groups of ``num_generations`` consecutive rows
            (the whole generation batch, gathered across processes). NaN marks an unscorable
            row: it is left out of its group's statistics and gets advantage 0.
        num_generations: G, completions per prompt.
        scale: ``"group"`` divides by the group's std (GRPO), ``"batch"`` by the batch std,
            ``"none"`` does not divide (Dr. GRPO).
        eps: added to the std (TRL uses 1e-4).

    Returns:
        (N,) advantages (v_i − mean_group) / (std + eps).
    """
    if num_generations < 1 or values.dim() != 1 or values.numel() % num_generations != 0:
        raise ValueError(
            f"values must be 1-D with a length divisible by num_generations={num_generations}, "
            f"got shape {tuple(values.shape)}"
        )
    grouped = values.view(-1, num_generations)
    mean = torch.nanmean(grouped, dim=1, keepdim=True)
    advantages = (grouped - mean).view(-1)
    if scale == "group":
        std = _nanstd(grouped, dim=1, keepdim=True) if num_generations > 1 else torch.zeros_like(mean)
        advantages = advantages / (std.expand_as(grouped).reshape(-1) + eps)
    elif scale == "batch":
        std = _nanstd(values) if values.numel() > 1 else torch.zeros(())
        advantages = advantages / (std + eps)
    elif scale != "none":
        raise ValueError(f"scale must be 'group', 'batch' or 'none', got {scale!r}")
    return torch.nan_to_num(advantages, nan=0.0)


def _nanstd(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """Unbiased standard deviation ignoring NaN (Bessel's correction, as ``torch.std``)."""
    mean = torch.nanmean(x, dim=dim, keepdim=True)
    count = (~torch.isnan(x)).sum(dim=dim, keepdim=keepdim) if dim is not None else (~torch.isnan(x)).sum()
    sq = (
        torch.nansum((x - mean) ** 2, dim=dim, keepdim=keepdim)
        if dim is not None
        else torch.nansum((x - mean) ** 2)
    )
    return torch.sqrt(sq / (count - 1))


@register_advantage_estimator("outcome")
def outcome_token_advantages(
    *, outcome_advantages: torch.Tensor, completion_mask: torch.Tensor, **_: object
) -> torch.Tensor:
    """Outcome GRPO: every completion token of o_i gets A_i.

    Args:
        outcome_advantages: (B,) A_i.
        completion_mask: (B, T) 1 on completion tokens.

    Returns:
        (B, T) A_i broadcast over the completion, 0 on padding.
    """
    return outcome_advantages.unsqueeze(1) * completion_mask.to(outcome_advantages.dtype)
