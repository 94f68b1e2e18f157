"""Technique options in ProcessGRPOConfig: defaults off, bad combinations rejected with the option named."""

from __future__ import annotations

import logging

import pytest

from psgrpo.config.process_grpo_config import ProcessGRPOConfig


def _config(tmp_path, **fields):
    return ProcessGRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **fields)


def test_everything_off_by_default(tmp_path):
    config = _config(tmp_path)
    assert (config.kl_schedule, config.curriculum) == ("none", "none")
    assert config.reward_norm_momentum is None and config.warmup_lr is None and not config.memory_bank


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kl_schedule": "cosine", "beta": 0.0}, "needs beta > 0"),
        (
            {"kl_schedule": "exp", "beta": 0.1},
            "kl_schedule='exp' is not allowed; choose one of 'none', 'linear', 'cosine'",
        ),
        ({"reward_norm_momentum": 1.5}, r"reward_norm_momentum must be in \[0, 1\)"),
        (
            {"reward_norm_momentum": 0.9, "multi_objective_aggregation": "normalize_then_sum"},
            "sum_then_normalize",
        ),
        ({"curriculum": "steps"}, "curriculum='steps' is not allowed"),
        (
            {"curriculum": "linear", "curriculum_start_fraction": 0.0, "max_steps": 5},
            "curriculum_start_fraction",
        ),
        ({"curriculum": "linear"}, "curriculum needs curriculum_steps, or max_steps > 0"),
        ({"curriculum_steps": 0}, "curriculum_steps must be positive"),
        ({"memory_bank_size": 0}, "memory_bank_size must be at least 1"),
        ({"warmup_lr": 1e-6}, "warmup_lr needs warmup_steps > 0"),
        ({"warmup_lr": -1.0, "warmup_steps": 2}, "warmup_lr must be positive"),
    ],
)
def test_bad_options(tmp_path, fields, message):
    with pytest.raises(ValueError, match=message):
        _config(tmp_path, **fields)


def test_reward_norm_with_group_scaling_warns(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="psgrpo.techniques.options"):
        _config(tmp_path, reward_norm_momentum=0.9)
    assert "--scale_rewards none" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="psgrpo.techniques.options"):
        _config(tmp_path, reward_norm_momentum=0.9, scale_rewards="none")
    assert caplog.text == ""
