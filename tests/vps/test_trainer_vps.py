"""ProcessGRPOTrainer with method='vps': entropy boundaries, packed probes and the hybrid advantage."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset
from trainer_helpers import length_reward, record_batches, tiny_run_args

from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.metrics_log import read_metrics
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
    return outputs[0], read_metrics(tmp_path / "out")[0], trainer


def test_vps_step_logs_confidence_metrics(tmp_path, char_tokenizer):
    out, log, trainer = _run(tmp_path, char_tokenizer)
    adv, mask = out["advantages"], out["completion_mask"]
    assert adv.shape == mask.shape and torch.isfinite(adv).all() and torch.all(adv[mask == 0] == 0)
    credit = trainer.last_credit.process
    cuts = [len(b) for b in credit.boundaries]
    assert log["vps/segments_per_completion"] == pytest.approx(sum(k + 1 for k in cuts) / len(cuts))
    assert max(cuts) > 0  # some completions were cut: the metric is not 1 by construction
    confidence = credit.confidence
    assert log["vps/c0_mean"] == pytest.approx(float(confidence[:, 0].mean()), rel=1e-5)
    delta = confidence[:, 1:] - confidence[:, :-1]
    real = torch.isfinite(delta)
    assert log["vps/frac_negative_segments"] == pytest.approx(float((delta[real] < 0).float().mean()))
    assert "vps/probe_seconds" in log
    # On-policy: TRL's loss uses its own detached log-probs (ratio exactly 1); the probe forward must not
    # replace them with float32 values computed outside TRL's autocast.
    assert out.get("old_per_token_logps") is None


def test_alpha_zero_is_outcome_grpo(tmp_path, char_tokenizer):
    out, _, trainer = _run(tmp_path, char_tokenizer, vps_alpha=0.0, vps_truncated="keep")
    credit = trainer.last_credit
    # no process term: TRL gets its own 1-D A_i, and the record holds its broadcast
    torch.testing.assert_close(out["advantages"], credit.outcome_advantages, rtol=0, atol=0)
    expected = credit.outcome_advantages.unsqueeze(1) * out["completion_mask"]
    torch.testing.assert_close(credit.token_advantages, expected, rtol=0, atol=0)


def test_marker_boundaries_are_the_segmenters_step_ends(tmp_path, char_tokenizer):
    from psgrpo.ps.segmentation import get_segmenter, segment_completions

    out, _, trainer = _run(tmp_path, char_tokenizer, vps_boundaries="markers", segmenter="newline")
    ids = [
        row[keep.bool()].tolist()
        for row, keep in zip(out["completion_ids"], out["completion_mask"], strict=True)
    ]
    spans = segment_completions(char_tokenizer, ids, get_segmenter("newline")).token_spans
    expected = [[end - 1 for _, end in row[:-1]][: trainer.args.vps_max_segments - 1] for row in spans]
    assert trainer.last_credit.process.boundaries == expected
    assert any(expected)  # some completions have several lines


def test_missing_answer_column_is_a_clear_error(tmp_path, char_tokenizer):
    data = Dataset.from_dict({"prompt": ["Question: 1+1\n"] * 8, "gold": ["2"] * 8})
    with pytest.raises(
        ValueError, match=r"vps_answer_column='answer': the training dataset has no such column"
    ):
        _run(tmp_path, char_tokenizer, dataset=data)  # refused when the trainer is built, before any step
    data = Dataset.from_dict({"prompt": ["Question: 1+1\n"] * 8, "answer": [""] + ["2"] * 7})
    with pytest.raises(ValueError, match=r"'train_dataset': row 0, field 'answer': gold answer '' is empty"):
        _run(tmp_path / "empty", char_tokenizer, dataset=data)  # a row without one: named before any step


def test_gold_suffix_probe_trains_and_shares_c0_within_a_group(tmp_path, char_tokenizer):
    out, log, trainer = _run(
        tmp_path, char_tokenizer, vps_probe="gold_suffix", vps_boundaries="markers", segmenter="newline"
    )
    credit = trainer.last_credit.process
    k = torch.tensor([len(b) for b in credit.boundaries])
    real = torch.arange(credit.confidence.shape[1])[None, :] <= k[:, None]
    c = credit.confidence
    assert torch.isfinite(c[real]).all() and ((c[real] > 0) & (c[real] <= 1)).all()
    assert torch.isnan(c[~real]).all()
    # C_0 scores the whole gold solution after the prompt: the same for every completion of a prompt
    c0 = c[:, 0].view(-1, trainer.args.num_generations)
    torch.testing.assert_close(c0, c0[:, :1].expand_as(c0))
    assert log["vps/c0_mean"] == pytest.approx(float(c[:, 0].mean()), rel=1e-5)
    assert 0 < log["vps/distinct_probe_frac"] < 1  # the shared C_0 is scored once per group
    assert torch.isfinite(out["advantages"]).all()


def test_gold_suffix_needs_no_answer_column(tmp_path, char_tokenizer):
    data = make_arith_dataset("train", n=16)
    data = data.remove_columns([name for name in data.column_names if name not in ("prompt", "solution")])
    out, log, _ = _run(
        tmp_path, char_tokenizer, dataset=data, vps_probe="gold_suffix", vps_boundaries="markers"
    )
    assert torch.isfinite(out["advantages"]).all() and log["vps/c0_mean"] > 0


def test_gold_suffix_needs_a_solution_column_and_step_boundaries(tmp_path, char_tokenizer):
    data = Dataset.from_dict({"prompt": ["Question: 1+1\n"] * 8, "answer": ["2"] * 8})
    with pytest.raises(ValueError, match="no column 'solution' .*set vps_solution_column"):
        _run(tmp_path, char_tokenizer, dataset=data, vps_probe="gold_suffix", vps_boundaries="markers")
    with pytest.raises(ValueError, match="needs step boundaries: set vps_boundaries='markers'"):
        ProcessGRPOConfig(**tiny_run_args(tmp_path, method="vps", vps_probe="gold_suffix"))


def test_an_answer_column_the_dataset_lacks_is_refused_when_the_trainer_is_built(tmp_path, char_tokenizer):
    """It trained until step 0, then said "row 0: gold answer is missing", naming no option (a bad-input sweep)."""
    with pytest.raises(
        ValueError, match=r"vps_answer_column='nosuch': the training dataset has no such column"
    ):
        _run(tmp_path, char_tokenizer, vps_answer_column="nosuch")


def test_gold_suffix_names_the_row_with_an_empty_solution(tmp_path, char_tokenizer):
    rows = make_arith_dataset("train", n=8).to_dict()
    rows["solution"] = ["  "] * len(rows["solution"])  # the column exists, its text does not
    with pytest.raises(ValueError, match=r"column 'solution'; row 0 of this batch has '  '"):
        _run(tmp_path, char_tokenizer, dataset=Dataset.from_dict(rows), vps_probe="gold_suffix",
             vps_boundaries="markers")  # fmt: skip


def equal_or_unscored(completions, **_):
    """Every group's first three rows the same reward (2.7844529, whose float32 group mean leaves a residue in
    TRL's advantages), the fourth unscored (None: TRL gives it A = 0)."""
    return [None if i % 4 == 3 else 2.7844529 for i in range(len(completions))]


@pytest.mark.slow
def test_drop_leaves_out_groups_whose_scored_rows_are_equal_despite_an_unscored_row(tmp_path, char_tokenizer):
    """vps_zero_variance='drop': a group of equal rewards gets no credit, also when a row was not scored."""
    args = tiny_run_args(tmp_path, method="vps", vps_min_segment_tokens=2, vps_zero_variance="drop")
    trainer = ProcessGRPOTrainer(
        model=build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64),
        reward_funcs=[equal_or_unscored],
        args=ProcessGRPOConfig(**args),
        train_dataset=make_arith_dataset("train", n=16),
        processing_class=char_tokenizer,
    )
    outputs = record_batches(trainer)
    trainer.train()
    residue = trainer.last_credit.outcome_advantages
    assert residue.abs().max() > 0  # the rounding residue the old test mistook for variance
    assert torch.all(outputs[0]["advantages"] == 0)
