"""Checks of a :class:`~psgrpo.config.ProcessGRPOConfig`, run when it is built (``__post_init__``).

Everything a typo or an impossible combination can break is refused here, before any model
loads: choices, ranges, finite numbers, the registered components and their keyword arguments,
cross-field rules of the methods, and the TRL option × method combinations psgrpo refuses.
"""

from __future__ import annotations

import re
from typing import Any

from psgrpo.advantages import ADVANTAGE_ESTIMATORS
from psgrpo.compatibility import check_trl_compatibility
from psgrpo.options import (
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
from psgrpo.rewards import REWARD_FUNCS
from psgrpo.techniques.options import check_technique_options


def check_config(config: Any) -> None:
    """Refuse a bad value or combination of ``config``'s fields (normalising the JSON/CSV ones in place).

    Raises:
        ValueError naming the field, the value and what is allowed.
    """
    check_finite_floats(config)
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
    check_registered(
        "step_scorer", config.step_scorer, STEP_SCORERS, hint=", or pass a callable to the trainer"
    )
    check_keyword_arguments(
        "step_scorer_kwargs", STEP_SCORERS.get(config.step_scorer), config.step_scorer_kwargs
    )
    if config.advantage_estimator is not None:
        check_registered("advantage_estimator", config.advantage_estimator, ADVANTAGE_ESTIMATORS)
    for name in config.reward_funcs:
        check_registered("reward_funcs", name, REWARD_FUNCS)
