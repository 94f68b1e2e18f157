"""KL coefficient schedule: β decays from ``beta`` towards ``beta_min`` over training.

TRL's ``GRPOTrainer`` adds ``self.beta · KL(π_θ ‖ π_ref)`` to its loss and reads ``self.beta`` at
every loss computation, so updating that attribute before each optimizer step is all it takes.
With progress ``p = global_step / max_steps`` ∈ [0, 1]:

* ``linear``: β_t = max(β_min, β_0 · (1 − p))
* ``cosine``: β_t = max(β_min, β_0 · ½ (1 + cos(π p)))

β_0 must be positive: TRL builds the reference model only when ``beta`` > 0 at start-up.
"""

from __future__ import annotations

import math
from typing import Any

from transformers import TrainerCallback

from psgrpo.config.options import KLSchedule, check_choice


def kl_coefficient(schedule: str, beta: float, beta_min: float, progress: float) -> float:
    """β at training progress ``progress`` (clipped to [0, 1]) for a schedule starting at ``beta``.

    ``none`` returns ``beta`` unchanged. Raises ValueError for an unknown schedule.
    """
    p = min(max(progress, 0.0), 1.0)
    if schedule == "none":
        return beta
    if schedule == "linear":
        decay = 1.0 - p
    elif schedule == "cosine":
        decay = 0.5 * (1.0 + math.cos(math.pi * p))
    else:
        check_choice("kl_schedule", schedule, KLSchedule)
        raise AssertionError(f"kl_schedule {schedule!r} is allowed but has no formula")
    return max(beta_min, beta * decay)


def check_kl_schedule(schedule: str, beta: float, beta_min: float) -> None:
    """Raise ValueError (naming the option) when a schedule cannot mean anything."""
    check_choice("kl_schedule", schedule, KLSchedule)
    if schedule == "none":
        return
    if beta <= 0:
        raise ValueError(
            f"kl_schedule={schedule!r} needs beta > 0 (the starting β; TRL builds the reference model only "
            f"when beta > 0), got beta={beta}. Set e.g. --beta 0.05, or --kl_schedule none."
        )
    if not 0 <= beta_min <= beta:
        raise ValueError(f"beta_min must be in [0, beta={beta}], got {beta_min}")


class KLScheduleCallback(TrainerCallback):
    """Set ``trainer.beta`` before every optimizer step and log it as ``beta`` (``train/beta``)."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer

    def on_step_begin(self, args, state, control, **kwargs) -> None:  # noqa: D401 - HF callback signature
        progress = state.global_step / state.max_steps if state.max_steps > 0 else 0.0
        beta = kl_coefficient(args.kl_schedule, args.beta, args.beta_min, progress)
        self.trainer.beta = beta
        self.trainer._metrics["train"]["beta"].append(beta)
