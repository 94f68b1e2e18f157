"""ProcessGRPOTrainer with method='vps': entropy boundaries, packed probes and the hybrid advantage."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from trainer_helpers import length_reward, read_metrics, record_batches, tiny_run_args

from psgrpo.config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer


def _run(tmp_path, tokenizer, dataset=None, **overrides):
    args = tiny_run_args(tmp_path, **{"method": "vps", "vps_min_segment_tokens": 2, **overrides})
    model = build_tiny_model(tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    trainer = ProcessGRPOTrainer(
        model=model,
        reward_funcs=[length_reward],
        args=ProcessGRPOConfig(**args),
        train_dataset=dataset if dataset is not None else make_arith_dataset("train", n=16),
        processing_class=tokenizer,
    )
    outputs = record_batches(trainer)
    trainer.train()
    return outputs[0], read_metrics(tmp_path / "out")[0]


def test_vps_step_logs_confidence_metrics(tmp_path, char_tokenizer):
    out, log = _run(tmp_path, char_tokenizer)
    adv, mask = out["advantages"], out["completion_mask"]
    assert adv.shape == mask.shape and torch.isfinite(adv).all() and torch.all(adv[mask == 0] == 0)
    assert 1.0 <= log["vps/segments_per_completion"] <= 4.0
    assert 0.0 < log["vps/c0_mean"] <= 1.0 and 0.0 <= log["vps/frac_negative_segments"] <= 1.0
    assert "vps/probe_seconds" in log
    # On-policy: TRL's loss uses its own detached log-probs (ratio exactly 1); the probe forward must not
    # replace them with float32 values computed outside TRL's autocast.
    assert out.get("old_per_token_logps") is None


def test_alpha_zero_is_outcome_grpo(tmp_path, char_tokenizer):
    out, _ = _run(tmp_path, char_tokenizer, vps_alpha=0.0, vps_truncated="keep")
    token_rows = out["advantages"]
    mask = out["completion_mask"].bool()
    for row, keep in zip(token_rows, mask, strict=True):  # constant along each completion
        assert torch.allclose(row[keep], row[keep][0].expand(int(keep.sum())))


def test_marker_boundaries(tmp_path, char_tokenizer):
    _, log = _run(tmp_path, char_tokenizer, vps_boundaries="markers", segmenter="newline")
    assert log["vps/segments_per_completion"] >= 1.0


def test_missing_answer_column_is_a_clear_error(tmp_path, char_tokenizer):
    data = Dataset.from_dict({"prompt": ["Question: 1+1\n"] * 8, "gold": ["2"] * 8})
    with pytest.raises(ValueError, match="row 0"):
        _run(tmp_path, char_tokenizer, dataset=data)
