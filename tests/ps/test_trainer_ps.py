"""ProcessGRPOTrainer with method='ps': step scorers wired through segmentation and group statistics."""

from __future__ import annotations

import pytest
import torch
from trainer_helpers import length_reward, record_batches, save_tiny_prm, tiny_run_args

from psgrpo.config.options import PsAdvantageMode, allowed
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.metrics_log import read_metrics
from psgrpo.ps.scorers.base import StepScoreError
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer

pytestmark = pytest.mark.slow  # each test runs training steps: `make test-fast` skips it


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


@pytest.mark.parametrize("mode", allowed(PsAdvantageMode))
def test_constant_step_scores_give_exactly_the_outcome_advantage(tmp_path, char_tokenizer, mode):
    """Every step scores the same → r̃ = 0 → A_t == A_i on every completion token, bit for bit."""
    trainer, outputs = _trainer(
        tmp_path,
        char_tokenizer,
        scorer=lambda prompts, steps, **kw: [[0.7] * len(s) for s in steps],
        ps_advantage_mode=mode,
    )
    assert trainer.signal.advantage_mode == ("min" if mode == "auto" else mode)  # 'auto' for a callable
    trainer.train()
    mask = outputs[0]["completion_mask"]
    credit = trainer.last_credit
    expected = credit.outcome_advantages.unsqueeze(1) * mask.to(credit.outcome_advantages.dtype)
    assert credit.outcome_advantages.abs().sum() > 0  # the comparison is not 0 == 0
    assert torch.equal(outputs[0]["advantages"], expected)
    assert all(s == 0.0 for row in credit.process.step_scores for s in row)
    logs = read_metrics(tmp_path / "out")
    assert logs[0]["ps/step_score_mean"] == pytest.approx(0.7)
    assert logs[0]["ps/process_adv_mean"] == 0.0 and logs[0]["ps/process_share"] == 0.0
    steps = [len(row) for row in credit.process.steps]
    assert logs[0]["ps/steps_per_completion"] == pytest.approx(sum(steps) / len(steps))
    assert "ps/tokens_per_step" in logs[0]
    assert "ps/unparsed_equations" not in logs[0]  # a plain callable counts nothing


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
    """The verifier built from its name scores each completion's steps exactly as the verifier itself does."""
    from psgrpo.ps.scorers.arithmetic import ArithmeticVerifier

    trainer, outputs = _trainer(tmp_path, char_tokenizer, step_scorer="arithmetic", segmenter="markers")
    assert trainer.signal.advantage_mode == "step"  # 'auto' for the verifier
    trainer.train()
    credit = trainer.last_credit.process
    assert isinstance(trainer.signal.step_scorer, ArithmeticVerifier)
    assert credit.raw_step_scores == ArithmeticVerifier()([None] * len(credit.steps), credit.steps)
    flat = [s for row in credit.raw_step_scores for s in row]
    logs = read_metrics(tmp_path / "out")
    assert logs[0]["ps/step_score_mean"] == pytest.approx(sum(flat) / len(flat))
    assert torch.isfinite(outputs[0]["advantages"]).all()
    for key in ("tokens_per_step", "frac_steps_no_equation", "frac_steps_noop", "frac_steps_unnecessary"):
        assert 0.0 <= logs[0][f"ps/{key}"] <= (1e4 if key == "tokens_per_step" else 1.0), key
    assert logs[0]["ps/unparsed_equations"] >= 0.0
    assert logs[0]["ps/tokens_per_step"] * logs[0]["ps/steps_per_completion"] == pytest.approx(
        logs[0]["completions/mean_length"], rel=1e-6
    )


def test_tiny_random_prm_runs_end_to_end(tmp_path, char_tokenizer):
    prm_dir = save_tiny_prm(tmp_path / "prm", char_tokenizer)
    trainer, outputs = _trainer(
        tmp_path,
        char_tokenizer,
        step_scorer="prm",
        step_scorer_kwargs={"model": str(prm_dir), "style": "token_classification", "step_separator": "\n"},
    )
    trainer.train()
    credit = trainer.last_credit.process
    from psgrpo.ps.scorers.prm import PRMScorer

    direct = PRMScorer(str(prm_dir), style="token_classification", step_separator="\n")
    out = outputs[0]
    prompts = [
        char_tokenizer.decode(ids[keep.bool()])
        for ids, keep in zip(out["prompt_ids"], out["prompt_mask"], strict=True)
    ]
    # the trainer's raw step scores are the PRM's P(good step) for the same prompts and steps
    rescored = direct(prompts, credit.steps)
    assert [len(r) for r in rescored] == [len(r) for r in credit.raw_step_scores] and sum(
        map(len, rescored)
    ) > 0
    for mine, theirs in zip(credit.raw_step_scores, rescored, strict=True):
        assert mine == pytest.approx(theirs, abs=1e-5)
    assert all(0.0 < s < 1.0 for row in credit.raw_step_scores for s in row)
    assert torch.isfinite(out["advantages"]).all()


def test_reference_scorer_trains_and_a_dataset_without_solutions_fails_before_training(
    tmp_path, char_tokenizer
):
    trainer, _ = _trainer(tmp_path, char_tokenizer, step_scorer="reference")
    assert trainer.signal.advantage_mode == "step"  # 'auto': exact, local scores like the verifier
    trainer.train()
    logs = read_metrics(tmp_path / "out")
    assert 0.0 <= logs[0]["ps/frac_steps_off_reference"] <= 1.0
    args = ProcessGRPOConfig(**tiny_run_args(tmp_path, method="ps", step_scorer="reference"))
    model = build_tiny_model(char_tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    no_solutions = make_arith_dataset("train", n=16).remove_columns(["solution", "completion"])
    with pytest.raises(ValueError, match=r"lacks \['solution'\]"):
        ProcessGRPOTrainer(
            model=model, args=args, train_dataset=no_solutions, processing_class=char_tokenizer
        )


def test_a_segmenter_that_never_splits_is_reported_once(tmp_path, char_tokenizer, caplog):
    """The GSM8K recipe's prompt asks for no step markers: the trainer says so instead of training as grpo."""
    trainer, _ = _trainer(
        tmp_path, char_tokenizer, segmenter="markers", segmenter_kwargs={"pattern": "NEVER-IN-A-COMPLETION"},
        max_steps=2,
    )  # fmt: skip
    with caplog.at_level("WARNING", logger="psgrpo"):
        trainer.train()
    warned = [
        r.getMessage() for r in caplog.records if "is one step with segmenter 'markers'" in r.getMessage()
    ]
    assert len(warned) == 1 and warned[0].startswith("method ps: every completion of step 0 is one step")
