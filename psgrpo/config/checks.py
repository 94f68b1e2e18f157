"""Checks of a :class:`~psgrpo.config.process_grpo_config.ProcessGRPOConfig`, run when it is built (``__post_init__``).

Everything a typo or an impossible combination can break is refused here, before any model
loads: choices, ranges, finite numbers, the registered components and their keyword arguments,
cross-field rules of the methods, and the TRL option × method combinations psgrpo refuses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psgrpo.advantages import ADVANTAGE_ESTIMATORS
from psgrpo.compatibility import check_trl_compatibility
from psgrpo.config.options import (
    RETIRED_ESTIMATORS,
    Curriculum,
    KLSchedule,
    Method,
    PsAdvantageMode,
    ScorerErrorPolicy,
    TrlImportanceSamplingLevel,
    TrlLossType,
    TrlMultiObjectiveAggregation,
    TrlScaleRewards,
    TruncatedMode,
    VpsBoundaries,
    VpsProbe,
    ZeroVarianceMode,
    check_choice,
    check_finite_floats,
    check_keyword_arguments,
    check_number,
    check_registered,
    json_object_option,
)
from psgrpo.ps.scorers import STEP_SCORERS
from psgrpo.ps.segmentation import SEGMENTERS, get_segmenter
from psgrpo.rewards.functions import REWARD_FUNCS, resolve_reward_func
from psgrpo.techniques.options import check_technique_options
from psgrpo.tree.options import check_tree_options


def check_config(config: Any) -> None:
    """Refuse a bad value or combination of ``config``'s fields (normalising the JSON/CSV ones in place).

    Raises:
        ValueError naming the field, the value and what is allowed.
    """
    check_finite_floats(config)
    check_training_length(config)
    check_choice("method", config.method, Method)
    check_choice("ps_advantage_mode", config.ps_advantage_mode, PsAdvantageMode)
    check_choice("ps_on_scorer_error", config.ps_on_scorer_error, ScorerErrorPolicy)
    check_choice("vps_boundaries", config.vps_boundaries, VpsBoundaries)
    check_choice("vps_probe", config.vps_probe, VpsProbe)
    if config.vps_probe == "gold_suffix" and config.vps_boundaries != "markers":
        raise ValueError(
            "vps_probe='gold_suffix' compares the completion's k-th step with the gold solution's k-th step, "
            f"so it needs step boundaries: set vps_boundaries='markers' (got {config.vps_boundaries!r})"
        )
    check_choice("vps_zero_variance", config.vps_zero_variance, ZeroVarianceMode)
    check_choice("vps_truncated", config.vps_truncated, TruncatedMode)
    check_choice("kl_schedule", config.kl_schedule, KLSchedule)
    check_choice("curriculum", config.curriculum, Curriculum)
    check_choice("loss_type", config.loss_type, TrlLossType)
    check_choice("scale_rewards", config.scale_rewards, TrlScaleRewards)
    check_choice("importance_sampling_level", config.importance_sampling_level, TrlImportanceSamplingLevel)
    check_choice(
        "multi_objective_aggregation", config.multi_objective_aggregation, TrlMultiObjectiveAggregation
    )
    check_technique_options(config)
    check_tree_options(config)
    for name in ("segmenter_kwargs", "step_scorer_kwargs"):
        setattr(config, name, json_object_option(name, getattr(config, name)))
    if isinstance(config.reward_funcs, str):  # YAML/CLI may give "correctness,format"
        config.reward_funcs = [name.strip() for name in config.reward_funcs.split(",") if name.strip()]
    check_number("correctness_rel_tol", config.correctness_rel_tol, low=0.0)
    check_number("ps_lambda", config.ps_lambda, low=0.0)
    check_number("ps_outcome_weight", config.ps_outcome_weight, low=0.0)
    check_number("ps_min_temperature", config.ps_min_temperature, low=0.0, low_open=True)
    check_number("vps_alpha", config.vps_alpha, low=0.0)
    check_number("vps_max_segments", config.vps_max_segments, low=1)
    check_number("vps_min_segment_tokens", config.vps_min_segment_tokens, low=1)
    check_number("vps_entropy_quantile", config.vps_entropy_quantile, low=0.0, high=1.0)
    check_number("vps_entropy_tolerance", config.vps_entropy_tolerance, low=0.0, high=1.0, high_open=True)
    check_number("vps_boundary_jitter", config.vps_boundary_jitter, low=0)
    check_number("vps_probe_chunk_size", config.vps_probe_chunk_size, low=1, allow_none=True)
    check_components(config)
    check_trl_compatibility(config)  # TRL option × method combinations psgrpo refuses


def check_step_scorer(step_scorer: str, step_scorer_kwargs: dict[str, Any], hint: str = "") -> None:
    """``step_scorer`` is a registered name and ``step_scorer_kwargs`` bind to it (``psgrpo train`` and
    ``psgrpo score-steps``): unknown names and non-finite numbers fail before the scorer is built."""
    check_registered("step_scorer", step_scorer, STEP_SCORERS, hint=hint)
    check_keyword_arguments("step_scorer_kwargs", STEP_SCORERS.get(step_scorer), step_scorer_kwargs)


def check_components(config: Any) -> None:
    """Names and keyword arguments of the segmenter, step scorer, estimator and rewards, before any loading.

    Builds the segmenter (cheap), and checks the step scorer's keyword arguments against its
    signature: unknown names, and numbers that are not finite numbers, fail here instead of
    after the model has loaded.
    """
    check_registered("segmenter", config.segmenter, SEGMENTERS)
    try:
        get_segmenter(config.segmenter, **config.segmenter_kwargs)
    except (TypeError, ValueError, re.error) as err:
        raise ValueError(
            f"segmenter_kwargs={config.segmenter_kwargs!r} do not fit segmenter {config.segmenter!r}: {err}"
        ) from None
    if config.step_scorer == "prm" and "model" not in config.step_scorer_kwargs:
        raise ValueError(
            "step_scorer='prm' needs the process reward model to score with: set step_scorer_kwargs "
            """'{"model": "PATH_OR_HUB_ID"}' (e.g. --step_scorer_kwargs '{"model": "Qwen/Qwen2.5-Math-PRM-7B"}')"""
        )
    check_step_scorer(
        config.step_scorer, config.step_scorer_kwargs, hint=", or pass a callable to the trainer"
    )
    if config.step_scorer == "prm" and isinstance(config.step_scorer_kwargs["model"], str):
        from psgrpo.loading import checkpoint_path

        # a missing local PRM fails here, before the policy loads (and is never sent to the Hub)
        checkpoint_path(config.step_scorer_kwargs["model"], option="step_scorer_kwargs['model']")
    if config.advantage_estimator in RETIRED_ESTIMATORS:
        new = RETIRED_ESTIMATORS[config.advantage_estimator]
        raise ValueError(
            f"advantage_estimator={config.advantage_estimator!r} was renamed: the estimators now carry their "
            f"method's name; use advantage_estimator={new!r} (or leave it unset: method={new!r} uses it)"
        )
    if config.advantage_estimator is not None:
        check_registered("advantage_estimator", config.advantage_estimator, ADVANTAGE_ESTIMATORS)
    for name in config.reward_funcs:
        if "." in name and name not in REWARD_FUNCS:
            resolve_reward_func(
                name
            )  # an import path, as `trl grpo` takes: imported now, so errors come first
        else:
            hint = ", or an import path such as my_rewards.accuracy (a function in my_rewards.py)"
            check_registered("reward_funcs", name, REWARD_FUNCS, hint=hint)


def check_training_length(config: Any) -> None:
    """A learning rate of at least 0 and a training length that trains at least one step.

    transformers accepts ``max_steps=0`` (it then trains a whole step) and a negative learning
    rate (torch refuses it at the first optimizer step, after the model has loaded).
    """
    check_number("learning_rate", config.learning_rate, low=0.0)
    if config.max_steps == 0 or config.max_steps < -1:
        raise ValueError(
            f"max_steps={config.max_steps} trains no step: give a positive number of optimizer steps, or -1 "
            f"(the default) to train num_train_epochs={config.num_train_epochs} epochs"
        )
    if config.max_steps == -1:
        check_number("num_train_epochs", config.num_train_epochs, low=0.0, low_open=True)


@contextmanager
def named_batch_errors(config: Any) -> Iterator[None]:
    """Around TRL's ``GRPOConfig.__post_init__``: its "generation_batch_size must be divisible by
    num_generations" names a value it derived; this names the options the user set instead."""
    explicit_generation_batch = config.generation_batch_size
    explicit_steps = config.steps_per_generation
    try:
        yield
    except ValueError as err:
        if "must be divisible by num_generations" not in str(err):
            raise
        raise ValueError(batch_message(config, explicit_generation_batch, explicit_steps)) from None


def batch_message(config: Any, generation_batch_size: int | None, steps_per_generation: int | None) -> str:
    """Why ``num_generations`` does not divide the completions generated per step, in the options set."""
    n = config.num_generations
    if generation_batch_size is not None:
        return (
            f"num_generations={n} must divide generation_batch_size={generation_batch_size} "
            "(each prompt's completions are generated together): change one of them"
        )
    factors = [f"per_device_train_batch_size={config.per_device_train_batch_size}"]
    if config.world_size > 1:
        factors.append(f"{config.world_size} processes")
    if steps_per_generation is not None:
        factors.append(f"steps_per_generation={steps_per_generation}")
    elif config.gradient_accumulation_steps > 1:
        factors.append(f"gradient_accumulation_steps={config.gradient_accumulation_steps}")
    total = config.generation_batch_size
    divisors = [d for d in range(2, total + 1) if total % d == 0][:6]
    per_device = config.per_device_train_batch_size
    multiple = per_device * n // math.gcd(per_device, n)
    return (
        f"num_generations={n} must divide the completions generated per step, {' × '.join(factors)} = {total}: "
        f"set per_device_train_batch_size to a multiple of {n} (e.g. {multiple}) or num_generations to a divisor "
        f"of {total} ({', '.join(map(str, divisors)) or 'none above 1'})"
    )
