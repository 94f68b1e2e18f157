"""Where psgrpo's token advantages (B, T) meet TRL's loss: three small hooks, never a copy of it.

TRL 1.16's ``GRPOTrainer._compute_loss`` accepts advantages of shape (B, T), but three of its
pieces were written for one advantage per sequence. With token credit (any method whose advantages
vary along a completion) each would silently undo it (docs/compatibility.md has the analysis and the measurements):

* **Sequence-level importance sampling** (GSPO, ``importance_sampling_level="sequence"``; also
  ``luspo``, ``sapo``). TRL forms one ratio s_i = exp(mean_t log π_θ/π_old) per sequence, so the
  gradient of Σ_t min(s_i·A_t, clip(s_i)·A_t) is (Σ_t A_t)·∇s_i: every token's credit is replaced
  by its row's sum, and ``ps``/``vps`` silently become outcome GRPO. psgrpo uses **GSPO-token**
  (Zheng et al., *Group Sequence Policy Optimization*, arXiv 2507.18071), the token-level variant
  its authors give for token advantages::

      s_{i,t} = sg[s_i] · π_θ(o_t | …) / sg[π_θ(o_t | …)]

  Its value is s_i on every token, so clipping is decided per sequence exactly as in GSPO; its
  gradient is s_i·∇log π_θ(o_t), so each token keeps its own A_t. With an advantage that is
  constant along a row, loss, clipping and gradient equal GSPO's (tested).
  :meth:`TokenCreditLossMixin._compute_loss` builds it by handing TRL's token-level branch the
  old log-probabilities log π_θ(o_t) − log s_i (detached), computed right after TRL's own forward.
* **The off-policy sequence mask** (``off_policy_mask_threshold``, DeepSeek-V3.2) keeps a
  sequence when A ≥ 0 or its mean KL is small. Given (B, T) advantages, TRL's test ``A ≥ 0``
  becomes per token, and only the negative tokens of a high-KL sequence are dropped.
  :meth:`~TokenCreditLossMixin.get_off_policy_mask` decides on the sequence's mean token
  advantage and drops whole rows, as the method intends.
* **VESPO's gamma weight** φ(w_i) (``loss_type="vespo"``) picks its shape (k, λ) from the sign
  of the advantage; per token, one sequence would get several "sequence" weights.
  :meth:`~TokenCreditLossMixin.get_gamma_weights` picks it from the sequence's mean token
  advantage, so φ is one number per sequence, as published, and each token keeps A_t in
  −φ_i·A_t·log π_θ(o_t).

With 1-D advantages (``method="grpo"``, or a process weight of 0; see
:func:`psgrpo.compatibility.has_token_credit`) every hook hands over to TRL unchanged, so TRL's
own code paths and logged metrics are untouched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from trl import GRPOTrainer


def sequence_advantages(advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """One advantage per sequence: the mean of its token advantages over ``mask``.

    Args:
        advantages: (B, T) token advantages, or (B,) / (B, 1) sequence advantages (returned as (B, 1)
            unchanged, so TRL's own 1-D path is untouched).
        mask: (B, T) 1 on the tokens that count (completion, minus tool output).

    Returns:
        (B, 1) in the dtype of ``advantages``; 0 for a row without tokens.
    """
    if advantages.dim() == 1:
        return advantages.unsqueeze(1)
    if advantages.shape[1] == 1:
        return advantages
    weights = mask.to(advantages.dtype)
    return (advantages * weights).sum(1, keepdim=True) / weights.sum(1, keepdim=True).clamp(min=1.0)


def row_advantages(
    token_advantages: torch.Tensor, completion_mask: torch.Tensor, empty: torch.Tensor
) -> torch.Tensor:
    """The one value each row's completion tokens share, for handing TRL a 1-D advantage.

    Used where a configuration has no process term (``method="grpo"``, ``ps_lambda=0``,
    ``vps_alpha=0``): the estimator then returns a value that is constant along each row.

    Args:
        token_advantages: (B, T) A_t.
        completion_mask: (B, T) 1 on completion tokens.
        empty: (B,) the value for rows without completion tokens (e.g. masked truncated
            completions, which contribute nothing to the loss): TRL's own A_i.

    Returns:
        (B,) in the dtype of ``token_advantages``.

    Raises:
        ValueError: naming the first row whose tokens carry different values (the estimator
            produced token credit where the configuration says there is none).
    """
    mask = completion_mask.bool()
    first = mask.to(torch.int8).argmax(dim=1, keepdim=True)  # index of each row's first completion token
    value = token_advantages.gather(1, first)
    varies = (mask & (token_advantages != value)).any(dim=1)
    if bool(varies.any()):
        row = int(varies.nonzero()[0, 0])
        raise ValueError(
            f"row {row}: the token advantages vary along the completion, but the configuration has no "
            "process term (method 'grpo', ps_lambda=0 or vps_alpha=0), so they should be one value per row; "
            "check the advantage estimator"
        )
    return torch.where(mask.any(dim=1), value.squeeze(1), empty.to(token_advantages.dtype))


def loss_mask(inputs: dict[str, Any]) -> torch.Tensor:
    """(B, T) the tokens TRL's loss counts: the completion mask, times the tool mask when there is one."""
    mask = inputs["completion_mask"]
    return mask * inputs["tool_mask"] if "tool_mask" in inputs else mask


def gspo_token_old_logps(
    per_token_logps: torch.Tensor, old_per_token_logps: torch.Tensor | None, mask: torch.Tensor
) -> torch.Tensor:
    """Old log-probabilities that make TRL's token-level ratio the GSPO-token ratio s_{i,t}.

    TRL's token branch computes exp(log π_θ(o_t) − old_t). With old_t = sg[log π_θ(o_t)] − log s_i
    that is s_i in value (log s_i = TRL's sequence log-ratio, the masked mean of
    log π_θ − log π_old) and s_i·∇log π_θ(o_t) in gradient.

    Args:
        per_token_logps: (B, T) log π_θ of the completion tokens (the loss forward; its gradient is
            not used here).
        old_per_token_logps: (B, T) log π_old, or None on-policy (TRL then uses π_θ itself).
        mask: (B, T) the tokens of each sequence's mean.

    Returns:
        (B, T) detached.
    """
    current = per_token_logps.detach()
    old = current if old_per_token_logps is None else old_per_token_logps
    weights = mask.to(current.dtype)
    log_s = ((current - old) * weights).sum(-1, keepdim=True) / weights.sum(-1, keepdim=True).clamp(min=1.0)
    return current - log_s


def with_sequence_advantages(trl_helper: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """A TRL helper that decides per sequence, called with each sequence's mean token advantage (B, 1).

    For ``GRPOTrainer.get_off_policy_mask`` (keep a sequence when its advantage is ≥ 0 or its KL is
    small: (B, 1)) and ``GRPOTrainer.get_gamma_weights`` (VESPO's φ(w_i), its shape picked by the
    sign of the advantage: (B, 1)). 1-D advantages pass through unchanged (:func:`sequence_advantages`).
    """

    @functools.wraps(trl_helper)
    def per_sequence(*, advantages: torch.Tensor, mask: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return trl_helper(advantages=sequence_advantages(advantages, mask), mask=mask, **kwargs)

    return per_sequence


@contextmanager
def _instance_override(obj: Any, name: str, value: Any) -> Iterator[None]:
    """Set ``obj.name = value`` on the instance for the duration of the block; restore what was there."""
    had = name in vars(obj)
    previous = vars(obj).get(name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if had:
            setattr(obj, name, previous)
        else:
            delattr(obj, name)


class TokenCreditLossMixin:
    """The three hooks of the module docstring; mixed into ``ProcessGRPOTrainer`` before ``GRPOTrainer``."""

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        if self.importance_sampling_level != "sequence" or inputs["advantages"].dim() == 1:
            return super()._compute_loss(model, inputs)
        # GSPO-token. A copy: the buffered batch is reused for num_iterations passes and must keep its old log-probs.
        inputs = dict(inputs)
        compute_logps = self._get_per_token_logps_and_entropies
        mask = loss_mask(inputs)

        def logps_then_token_ratio(*args: Any, **kwargs: Any) -> tuple:
            # TRL 1.16 reads inputs["old_per_token_logps"] after this forward (tests/test_trl_contract.py)
            per_token_logps, *rest = compute_logps(*args, **kwargs)
            inputs["old_per_token_logps"] = gspo_token_old_logps(
                per_token_logps, inputs.get("old_per_token_logps"), mask
            )
            return (per_token_logps, *rest)

        with (
            _instance_override(self, "_get_per_token_logps_and_entropies", logps_then_token_ratio),
            _instance_override(self, "importance_sampling_level", "token"),
        ):
            return super()._compute_loss(model, inputs)

    # TRL calls both with keyword arguments only
    get_off_policy_mask = staticmethod(with_sequence_advantages(GRPOTrainer.get_off_policy_mask))
    get_gamma_weights = staticmethod(with_sequence_advantages(GRPOTrainer.get_gamma_weights))
