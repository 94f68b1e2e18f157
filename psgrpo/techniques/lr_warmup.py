"""Flat learning-rate warm-up: ``warmup_lr`` for the first ``warmup_steps`` steps, then the usual schedule.

The GSM8K recipe trains at 1e-6 for its first steps and at 5e-6 afterwards. None of transformers'
schedulers does that: ``constant_with_warmup`` and ``warmup_stable_decay`` ramp from 0 (or from
``min_lr_ratio`` · lr) up to ``learning_rate``; they never hold a low rate flat. So the factor of
the learning rate at optimizer step s is

    warmup_lr / learning_rate        for s < warmup_steps
    base(s)                          afterwards,

where ``base`` is ``lr_scheduler_type`` built *without* warm-up (``constant`` → 1, ``cosine`` → its
decay over the whole run, …).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR
from transformers import get_scheduler


def flat_warmup(base: Callable[[int], float], warmup_steps: int, ratio: float) -> Callable[[int], float]:
    """LR factor of step s: ``ratio`` for s < ``warmup_steps``, else ``base(s)``.

    A plain function on purpose: ``LambdaLR.state_dict`` skips functions, so checkpoints hold only the
    step counter (which is all a resumed run needs; ``create_scheduler`` rebuilds the factors).
    """

    def factor(step: int) -> float:
        return ratio if step < warmup_steps else base(step)

    return factor


def flat_warmup_scheduler(
    optimizer: Optimizer,
    lr_scheduler_type: str,
    learning_rate: float,
    warmup_lr: float,
    warmup_steps: int,
    num_training_steps: int,
    scheduler_kwargs: dict[str, Any] | None = None,
) -> LambdaLR:
    """``lr_scheduler_type`` without warm-up, preceded by ``warmup_steps`` steps at ``warmup_lr``.

    Raises:
        ValueError: the scheduler type is not a per-step ``LambdaLR`` (``reduce_lr_on_plateau``, ``greedy``).
    """
    base = get_scheduler(
        lr_scheduler_type,
        optimizer=optimizer,
        num_warmup_steps=0,
        num_training_steps=num_training_steps,
        scheduler_specific_kwargs=scheduler_kwargs or {},
    )
    if not isinstance(base, LambdaLR):
        raise ValueError(
            f"warmup_lr works with per-step schedulers (constant, linear, cosine, …), not {lr_scheduler_type!r}"
        )
    ratio = warmup_lr / learning_rate
    return LambdaLR(optimizer, [flat_warmup(f, warmup_steps, ratio) for f in base.lr_lambdas])
