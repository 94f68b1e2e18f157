"""Flat learning-rate warm-up: warmup_lr for the first steps, then the configured schedule."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import get_scheduler

from psgrpo.techniques.lr_warmup import flat_warmup_scheduler


def _lrs(scheduler, optimizer, steps):
    """The learning rate used at optimizer steps 0 .. steps-1."""
    lrs = []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


def _optimizer(lr=5e-6):
    return torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=lr)


def test_flat_then_constant():
    optimizer = _optimizer()
    scheduler = flat_warmup_scheduler(
        optimizer, "constant", 5e-6, 1e-6, warmup_steps=3, num_training_steps=10
    )
    assert _lrs(scheduler, optimizer, 6) == pytest.approx([1e-6] * 3 + [5e-6] * 3)


def test_flat_then_cosine_without_ramp():
    optimizer = _optimizer()
    scheduler = flat_warmup_scheduler(optimizer, "cosine", 5e-6, 1e-6, warmup_steps=2, num_training_steps=8)
    cosine = [5e-6 * 0.5 * (1 + math.cos(math.pi * s / 8)) for s in range(2, 6)]
    assert _lrs(scheduler, optimizer, 6) == pytest.approx([1e-6, 1e-6, *cosine])


def test_transformers_warmups_ramp_from_zero():
    """Why the option exists: the built-in warm-ups never hold a low rate flat."""
    for name, kwargs in [("constant_with_warmup", {}), ("warmup_stable_decay", {"num_decay_steps": 0})]:
        optimizer = _optimizer()
        scheduler = get_scheduler(
            name, optimizer, num_warmup_steps=4, num_training_steps=8, scheduler_specific_kwargs=kwargs
        )
        lrs = _lrs(scheduler, optimizer, 5)
        assert lrs[0] == 0.0 and lrs[1] < lrs[2] < lrs[3] < lrs[4], name


def test_state_dict_loads_with_weights_only(tmp_path):
    optimizer = _optimizer()
    scheduler = flat_warmup_scheduler(
        optimizer, "constant", 5e-6, 1e-6, warmup_steps=3, num_training_steps=10
    )
    _lrs(scheduler, optimizer, 2)
    torch.save(scheduler.state_dict(), tmp_path / "scheduler.pt")
    resumed_opt = _optimizer()
    resumed = flat_warmup_scheduler(
        resumed_opt, "constant", 5e-6, 1e-6, warmup_steps=3, num_training_steps=10
    )
    resumed.load_state_dict(torch.load(tmp_path / "scheduler.pt", weights_only=True))
    assert resumed.last_epoch == 2
    assert resumed.get_last_lr() == pytest.approx([1e-6])


def test_rejects_non_lambda_schedulers():
    with pytest.raises(ValueError, match="per-step schedulers"):
        flat_warmup_scheduler(_optimizer(), "reduce_lr_on_plateau", 5e-6, 1e-6, 3, 10)


def test_gsm8k_recipe_uses_the_seed_warmup():
    from trl import ModelConfig, TrlParser

    from psgrpo.config.process_grpo_config import ProcessGRPOConfig
    from psgrpo.data.tasks import TaskConfig
    from psgrpo.loading import RECIPES_DIR

    _, args, _ = TrlParser((TaskConfig, ProcessGRPOConfig, ModelConfig)).parse_args_and_config(
        ["--config", str(RECIPES_DIR / "gsm8k_qwen2.5_0.5b.yaml"), "--use_cpu", "true"]
    )
    assert (args.warmup_lr, args.warmup_steps, args.learning_rate) == (1e-6, 10, 5e-6)
    assert args.lr_scheduler_type == "constant"
