"""ProcessGRPOTrainer with method='ps': step scorers wired through segmentation and group statistics."""

from __future__ import annotations

import pytest
import torch
from trainer_helpers import length_reward, read_metrics, record_batches, save_tiny_prm, tiny_run_args

from psgrpo.config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.scorers.base import StepScoreError
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer


def _trainer(tmp_path, tokenizer, scorer=None, **overrides):
    # random tiny models rarely write "Step N:"; newlines give several steps
    args = tiny_run_args(tmp_path, **{"method": "ps", "segmenter": "newline", **overrides})
    model = build_tiny_model(tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    trainer = ProcessGRPOTrainer(
        model=model,
        reward_funcs=[length_reward],
        args=ProcessGRPOConfig(**args),
        train_dataset=make_arith_dataset("train", n=16),
        processing_class=tokenizer,
        step_scorer=scorer,
    )
    return trainer, record_batches(trainer)


def test_constant_step_scores_reduce_ps_to_outcome(tmp_path, char_tokenizer):
    trainer, outputs = _trainer(
        tmp_path, char_tokenizer, scorer=lambda prompts, steps, **kw: [[0.7] * len(s) for s in steps]
    )
    trainer.train()
    out = outputs[0]
    assert out["advantages"].shape == out["completion_mask"].shape
    logs = read_metrics(tmp_path / "out")
    assert logs[0]["ps/step_score_mean"] == pytest.approx(0.7)
    assert logs[0]["ps/process_adv_mean"] == pytest.approx(0.0, abs=1e-6)
    assert logs[0]["ps/steps_per_completion"] >= 1 and "ps/scorer_seconds" in logs[0]


def test_step_scores_reach_the_tokens(tmp_path, char_tokenizer):
    """Score = step position: later steps score higher; with w=0 and 'step' mode tokens carry r̃ of their step."""

    def by_position(prompts, steps, **columns):
        assert "answer" in columns and len(columns["answer"]) == len(steps)  # dataset columns are passed
        return [[float(k) for k in range(len(s))] for s in steps]

    trainer, outputs = _trainer(
        tmp_path, char_tokenizer, scorer=by_position, ps_advantage_mode="step", ps_outcome_weight=0.0
    )
    trainer.train()
    adv, mask = outputs[0]["advantages"], outputs[0]["completion_mask"]
    assert torch.all(adv[mask == 0] == 0)
    assert adv.abs().sum() > 0
    for row, keep in zip(adv, mask.bool(), strict=True):  # non-decreasing along the completion
        values = row[keep]
        assert torch.all(values[1:] >= values[:-1] - 1e-6)


def test_scorer_errors_name_the_scorer_and_sample(tmp_path, char_tokenizer):
    def flaky_scorer(prompts, steps, **columns):
        return [[1.0] * (len(s) + (i == 2)) for i, s in enumerate(steps)]

    trainer, _ = _trainer(tmp_path, char_tokenizer, scorer=flaky_scorer)
    with pytest.raises(StepScoreError, match="flaky_scorer.*sample 2"):
        trainer.train()


def test_scorer_failure_can_fall_back_to_outcome(tmp_path, char_tokenizer):
    def nan_for_long(prompts, steps, **columns):
        return [[float("nan")] * len(s) if len(s) > 1 else [1.0] * len(s) for s in steps]

    trainer, outputs = _trainer(tmp_path, char_tokenizer, scorer=nan_for_long, ps_on_scorer_error="outcome")
    trainer.train()
    logs = read_metrics(tmp_path / "out")
    assert logs[0]["ps/scorer_fallbacks"] > 0
    assert torch.isfinite(outputs[0]["advantages"]).all()


def test_arithmetic_verifier_by_name(tmp_path, char_tokenizer):
    trainer, outputs = _trainer(tmp_path, char_tokenizer, step_scorer="arithmetic", segmenter="markers")
    trainer.train()
    assert torch.isfinite(outputs[0]["advantages"]).all()


def test_tiny_random_prm_runs_end_to_end(tmp_path, char_tokenizer):
    prm_dir = save_tiny_prm(tmp_path / "prm", char_tokenizer)
    trainer, outputs = _trainer(
        tmp_path,
        char_tokenizer,
        step_scorer="prm",
        step_scorer_kwargs={"model": str(prm_dir), "style": "token_classification", "step_separator": "\n"},
    )
    trainer.train()
    logs = read_metrics(tmp_path / "out")
    assert 0.0 <= logs[0]["ps/step_score_mean"] <= 1.0
    assert torch.isfinite(outputs[0]["advantages"]).all()
