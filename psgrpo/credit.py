"""The interface between a method's process signal and the trainer, and the record of the credit given.

Each method with a process signal owns one module that turns a scored rollout into the keyword
arguments of its advantage estimator (the method's spec builds it: ``MethodSpec.signal``). Every
signal is called the same way::

    signal = method_signal(model, output, inputs, num_generations, step)   # -> SignalOutput

and the trainer does not know what is inside. ``grpo`` has no signal: its estimator reads A_i alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import torch


@dataclass
class SignalOutput:
    """What a method's signal stage hands the trainer for one batch.

    Attributes:
        estimator_kwargs: the method estimator's own keyword arguments: tensors of the local rows (the
            method's options are bound to the estimator once: :func:`psgrpo.methods.estimator_options`).
        metrics: ``name → value`` over the whole generation batch (already reduced over
            processes); logged under the trainer's mode.
        credit: the method's per-completion record for ``psgrpo inspect`` (``PsCredit`` /
            ``VpsCredit``).
    """

    estimator_kwargs: dict[str, Any]
    metrics: dict[str, float] = field(default_factory=dict)
    credit: Any = None
    outcome_weight: None = None
    """Removed: w is now the method's option bound to its estimator (:func:`psgrpo.methods.estimator_options`)."""

    def __post_init__(self) -> None:
        if self.outcome_weight is not None:
            raise TypeError(
                "SignalOutput(outcome_weight=...) was removed: the weight of A_i is the method's own option, bound "
                "to its estimator once (psgrpo.methods.estimator_options); drop the argument"
            )


@dataclass
class StepRecord:
    """What the stages of one generation batch hand each other: made anew by the trainer for every batch.

    The trainer's mixins write into it and the signal reads it, instead of attributes one class sets and
    another reads.

    Attributes:
        inputs: the batch's dataset rows, as TRL passes them to ``_generate_and_score_completions`` (the
            memory bank reads their gold answers).
        rewards_per_func: (N, F) each reward function's raw value for all processes' rows, NaN where a
            function skipped a row; recorded from TRL's ``_calculate_rewards``.
        segment_ends: per local row, the D − 1 inner segment ends tree sampling cut (``method='tree'``);
            ``None`` where the batch was not tree-sampled.
    """

    inputs: list[dict[str, Any]]
    rewards_per_func: torch.Tensor | None = None
    segment_ends: list[list[int]] | None = None


class ProcessSignal(Protocol):
    """A method's signal stage (see the module docstring)."""

    def __call__(
        self,
        model: Any,
        output: dict[str, Any],
        inputs: list[dict[str, Any]],
        num_generations: int,
        step: int,
    ) -> SignalOutput: ...


@dataclass
class CreditRecord:
    """The credit of the last batch the trainer scored (its local rows), as ``psgrpo inspect`` reads it.

    Attributes:
        outcome_advantages: (B,) A_i, after the training techniques.
        token_advantages: (B, T) A_t, 0 on padding: what TRL's loss received, or its broadcast where TRL
            received the 1-D A_i (no process term: :func:`psgrpo.compatibility.has_token_credit`).
        process: the method's record (``None`` for ``grpo``).
    """

    outcome_advantages: torch.Tensor
    token_advantages: torch.Tensor
    process: Any = None


def process_term_metrics(
    token_advantages: torch.Tensor,
    outcome_advantages: torch.Tensor,
    completion_mask: torch.Tensor,
    outcome_weight: float,
    accelerator: Any,
) -> dict[str, float]:
    """How much of A_t is process credit: mean/std of A_t − w·A_i, and its share of Σ|A_t| (whole batch).

    Args:
        token_advantages: (B, T) A_t.
        outcome_advantages: (B,) A_i.
        completion_mask: (B, T) 1 on completion tokens.
        outcome_weight: w, the weight of A_i inside A_t.
        accelerator: sums over processes.

    Returns:
        ``process_adv_mean``, ``process_adv_std`` and ``process_share`` = Σ|A_t − w·A_i| /
        (Σ|A_t − w·A_i| + Σ|w·A_i|) over completion tokens (0 when both are 0).
    """
    mask = completion_mask.to(token_advantages.dtype)
    outcome = outcome_weight * outcome_advantages.unsqueeze(1) * mask
    process = (token_advantages - outcome)[mask.bool()]
    stats = torch.stack(
        [process.sum(), (process**2).sum(), mask.sum(), process.abs().sum(), outcome.abs().sum()]
    )
    total, total_sq, count, process_abs, outcome_abs = accelerator.reduce(stats, reduction="sum").tolist()
    mean = total / max(count, 1.0)
    return {
        "process_adv_mean": mean,
        "process_adv_std": max(total_sq / max(count, 1.0) - mean**2, 0.0) ** 0.5,
        "process_share": process_abs / (process_abs + outcome_abs) if process_abs + outcome_abs > 0 else 0.0,
    }
