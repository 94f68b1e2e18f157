"""Validation of the technique options of ``ProcessGRPOConfig`` (called from its ``__post_init__``)."""

from __future__ import annotations

import logging
from typing import Any

from psgrpo.techniques.kl_schedule import check_kl_schedule

logger = logging.getLogger(__name__)


def check_technique_options(args: Any) -> None:
    """Raise ValueError naming the option for inconsistent technique settings; warn for pointless ones."""
    check_kl_schedule(args.kl_schedule, args.beta, args.beta_min)
    if args.reward_norm_momentum is not None:
        if not 0.0 <= args.reward_norm_momentum < 1.0:
            raise ValueError(f"reward_norm_momentum must be in [0, 1), got {args.reward_norm_momentum}")
        if args.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError(
                "reward_norm_momentum normalises the summed reward, so it needs "
                f"multi_objective_aggregation='sum_then_normalize', got {args.multi_objective_aggregation!r}"
            )
        if args.scale_rewards != "none":
            logger.warning(
                "reward_norm_momentum with scale_rewards=%r has almost no effect: the group advantage divides "
                "by a std again. Use --scale_rewards none to get A = (r − group mean) / running std.",
                args.scale_rewards,
            )
    if not 0.0 < args.curriculum_start_fraction <= 1.0:
        raise ValueError(f"curriculum_start_fraction must be in (0, 1], got {args.curriculum_start_fraction}")
    if args.curriculum_steps is not None and args.curriculum_steps <= 0:
        raise ValueError(f"curriculum_steps must be positive, got {args.curriculum_steps}")
    if args.curriculum != "none" and args.curriculum_steps is None and args.max_steps <= 0:
        raise ValueError("curriculum needs curriculum_steps, or max_steps > 0 to grow the pool over")
    if args.memory_bank_size < 1:
        raise ValueError(f"memory_bank_size must be at least 1, got {args.memory_bank_size}")
    if args.warmup_lr is not None:
        if args.warmup_lr <= 0:
            raise ValueError(f"warmup_lr must be positive, got {args.warmup_lr}")
        if args.warmup_steps <= 0:
            raise ValueError("warmup_lr needs warmup_steps > 0 (the number of steps at warmup_lr)")
