"""HeldOutEvalCallback: held-out curves logged through the trainer, without disturbing training."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
import torch
from launcher import run_launch
from trainer_helpers import length_reward, record_batches, tiny_run_args

import psgrpo.eval.heldout as heldout_module
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.eval.generation import evaluate_model
from psgrpo.eval.heldout import HeldOutEvalCallback
from psgrpo.metrics_log import read_metrics
from psgrpo.rewards.functions import correctness_reward, format_reward
from psgrpo.tiny.model import build_tiny_model
from psgrpo.trainer import ProcessGRPOTrainer

pytestmark = pytest.mark.slow  # each test trains and evaluates: `make test-fast` skips it

EVAL_KEYS = {
    "accuracy",
    "format_rate",
    "answer_rate",
    "mean_tokens",
    "median_tokens",
    "n",
    "num_samples",
    "n_completions",
    "step_complete_rate",
    "step_checked_rate",
    *(f"error_type/{kind}" for kind in ("correct", "format", "calculation", "logic")),
}
COST_KEYS = {"wall_seconds", "train_seconds", "eval_seconds", "completion_tokens"}


def _trainer(tmp_path, tokenizer, name, max_steps=3):
    torch.manual_seed(0)
    model = build_tiny_model(tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64)
    args = ProcessGRPOConfig(
        method="grpo",
        **tiny_run_args(
            tmp_path, output_dir=str(tmp_path / name), max_steps=max_steps, max_completion_length=12
        ),
    )
    return ProcessGRPOTrainer(
        model=model,
        reward_funcs=[correctness_reward, format_reward, length_reward],
        args=args,
        train_dataset=make_arith_dataset("train", n=16),
        processing_class=tokenizer,
    )


def _heldout(records):
    return [r for r in records if "heldout/accuracy" in r]


def test_logs_heldout_curve_every_n_steps_and_at_the_end(tmp_path, char_tokenizer):
    eval_rows = make_arith_dataset("test", n=4)
    trainer = _trainer(tmp_path, char_tokenizer, "run")
    batches = record_batches(trainer)
    trainer.add_callback(
        HeldOutEvalCallback(trainer, eval_rows, every_steps=2, max_new_tokens=8, batch_size=4)
    )
    trainer.train()

    records = read_metrics(tmp_path / "run")
    heldout = _heldout(records)
    assert [r["step"] for r in heldout] == [0, 2, 3]  # start, every 2, and the last step
    for r in heldout:
        assert {
            key.removeprefix("heldout/") for key in r if key.startswith("heldout/")
        } == EVAL_KEYS | COST_KEYS
        assert r["heldout/n"] == 4.0 and r["heldout/mean_tokens"] <= 8
    # Cumulative generated tokens: the completion masks of the rollouts before each evaluation.
    per_step = [int(b["completion_mask"].sum()) for b in batches]
    assert [r["heldout/completion_tokens"] for r in heldout] == [0, sum(per_step[:2]), sum(per_step)]
    walls = [r["heldout/wall_seconds"] for r in heldout]
    assert walls == sorted(walls)
    # Training time excludes the earlier evaluations' time exactly.
    for prev, cur in zip(heldout, heldout[1:], strict=False):
        spent = cur["heldout/wall_seconds"] - cur["heldout/train_seconds"]
        expected = prev["heldout/wall_seconds"] - prev["heldout/train_seconds"] + prev["heldout/eval_seconds"]
        assert spent == pytest.approx(expected)
    # The training records are untouched: every step still logs its loss and rewards separately.
    assert [r["step"] for r in records if "loss" in r] == [1, 2, 3]
    assert all("reward" in r for r in records if "loss" in r)
    # Same numbers as evaluating the final model directly (greedy is deterministic).
    final = evaluate_model(trainer.model, char_tokenizer, eval_rows, max_new_tokens=8, batch_size=4)
    assert heldout[-1]["heldout/accuracy"] == final["accuracy"]
    assert heldout[-1]["heldout/mean_tokens"] == final["mean_tokens"]


def test_evaluation_does_not_change_training(tmp_path, char_tokenizer):
    plain = _trainer(tmp_path, char_tokenizer, "plain", max_steps=2)
    plain.train()
    evaluated = _trainer(tmp_path, char_tokenizer, "evaluated", max_steps=2)
    evaluated.add_callback(
        HeldOutEvalCallback(evaluated, make_arith_dataset("test", n=4), every_steps=1, max_new_tokens=8)
    )
    evaluated.train()
    losses = [
        [r["loss"] for r in read_metrics(tmp_path / name) if "loss" in r] for name in ("plain", "evaluated")
    ]
    assert losses[0] == losses[1]
    for (name, p), q in zip(plain.model.named_parameters(), evaluated.model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=name)


def test_no_start_evaluation_when_not_asked(tmp_path, char_tokenizer):
    trainer = _trainer(tmp_path, char_tokenizer, "run", max_steps=2)
    trainer.add_callback(
        HeldOutEvalCallback(
            trainer, make_arith_dataset("test", n=2), every_steps=5, eval_on_start=False, max_new_tokens=4
        )
    )
    trainer.train()
    assert [r["step"] for r in _heldout(read_metrics(tmp_path / "run"))] == [2]  # only the last step


def test_rejects_non_positive_interval(tmp_path, char_tokenizer):
    trainer = _trainer(tmp_path, char_tokenizer, "run")
    with pytest.raises(ValueError, match="heldout_eval_steps must be a positive"):
        HeldOutEvalCallback(trainer, make_arith_dataset("test", n=2), every_steps=0)


def test_second_run_reuses_step0_and_only_step0(tmp_path, char_tokenizer, monkeypatch):
    calls = []
    real = heldout_module.evaluate_model

    def counting(model, *args, **kwargs):
        calls.append(model)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(heldout_module, "evaluate_model", counting)
    rows = make_arith_dataset("test", n=4)
    cache = tmp_path / "cache"
    curves = []
    for name in ("first", "second"):
        trainer = _trainer(tmp_path, char_tokenizer, name, max_steps=2)
        trainer.add_callback(
            HeldOutEvalCallback(
                trainer, rows, every_steps=1, max_new_tokens=8, batch_size=4, cache_dir=str(cache)
            )
        )
        trainer.train()
        curves.append(_heldout(read_metrics(tmp_path / name)))
    assert len(calls) == 5  # first: steps 0, 1, 2; second: steps 1, 2 (step 0 from the cache)
    assert len(list(cache.glob("*.json"))) == 1
    first, second = curves
    assert [r["step"] for r in second] == [0, 1, 2]
    metric = [k for k in first[0] if k.startswith("heldout/") and not k.endswith(("seconds", "tokens"))]
    assert {k: second[0][k] for k in metric} == {k: first[0][k] for k in metric}
    assert second[0]["heldout/eval_seconds"] < first[0]["heldout/eval_seconds"]
    # Another starting model is another key: evaluated, not reused.
    trainer = _trainer(tmp_path, char_tokenizer, "third", max_steps=1)
    with torch.no_grad():
        trainer.model.lm_head.weight.mul_(1.5)
    trainer.add_callback(
        HeldOutEvalCallback(
            trainer, rows, every_steps=1, max_new_tokens=8, batch_size=4, cache_dir=str(cache)
        )
    )
    trainer.train()
    assert len(calls) == 7 and len(list(cache.glob("*.json"))) == 2


def test_unwritable_cache_warns_and_the_run_goes_on(tmp_path, char_tokenizer, caplog):
    blocked = tmp_path / "a_file"
    blocked.write_text("not a folder")
    trainer = _trainer(tmp_path, char_tokenizer, "run", max_steps=1)
    trainer.add_callback(
        HeldOutEvalCallback(
            trainer, make_arith_dataset("test", n=2), every_steps=1, max_new_tokens=4, cache_dir=str(blocked)
        )
    )
    with caplog.at_level(logging.WARNING, logger="psgrpo.eval.heldout"):
        trainer.train()
    assert [r["step"] for r in _heldout(read_metrics(tmp_path / "run"))] == [0, 1]
    assert "held-out cache" in caplog.text and "not written" in caplog.text


@pytest.mark.slow
@pytest.mark.parametrize("native_bf16", ["0", "1"])
def test_two_process_run_evaluates_on_main_and_does_not_hang(tmp_path, native_bf16):
    """DDP on CPU (gloo): the main process generates, the other waits; both finish; one record per evaluation.

    On both CPU kinds (``PSGRPO_NATIVE_BF16``): where bf16 was off (AVX2), nothing set ``use_cpu``, accelerate
    gave each process ``DistributedType.NO``, and the two trained alone until the other process found no
    broadcast metrics at the first evaluation (config/precision.py's resolve_use_cpu)."""
    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "ddp"
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        "-m", "psgrpo.commands.cli", "train", "--output_dir", str(out), "--ddp_backend", "gloo",
        "--max_steps", "2", "--per_device_train_batch_size", "8", "--max_completion_length", "8",
        "--max_eval_examples", "3", "--heldout_eval_steps", "1", "--eval_before_after", "false",
        "--report_to", "none", "--save_strategy", "no", "--logging_steps", "1", "--disable_tqdm", "true",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(repo), "PSGRPO_NATIVE_BF16": native_bf16}
    done = run_launch(command, env=env, cwd=repo, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "parallel_mode != ParallelMode.DISTRIBUTED" not in done.stderr  # both processes in one DDP run
    heldout = _heldout(read_metrics(out))
    assert [r["step"] for r in heldout] == [0, 1, 2]
    # 2 processes × 8 completions × at most 8 tokens per step, gathered over both processes.
    tokens = [r["heldout/completion_tokens"] for r in heldout]
    assert tokens[0] == 0 and 64 < tokens[1] <= 128 and tokens[2] > tokens[1]  # > 64: both processes counted


def test_a_held_out_prompt_the_context_cannot_hold_is_refused_when_the_callback_is_built(
    tmp_path, char_tokenizer, caplog
):
    """On every process, before training: at an evaluation only the main process generates, and a refusal there
    would leave the others waiting at the barrier (the held-out set is not the trainer's eval_dataset)."""
    from datasets import Dataset

    from psgrpo.data.validation import DatasetValidationError

    trainer = _trainer(tmp_path, char_tokenizer, "run", max_steps=1)
    context = trainer.model.config.max_position_embeddings
    rows = make_arith_dataset("test", n=2).to_list()
    long = Dataset.from_list([rows[0], {**rows[1], "prompt": "7" * context}])
    with pytest.raises(
        DatasetValidationError, match=rf"'held-out set': row 1, field 'prompt': the prompt is {context}"
    ):
        HeldOutEvalCallback(trainer, long, every_steps=1, max_new_tokens=4)
    tight = Dataset.from_list([rows[0], {**rows[1], "prompt": "7" * (context - 2)}])
    with caplog.at_level(logging.WARNING, logger="psgrpo.eval.heldout"):
        HeldOutEvalCallback(trainer, tight, every_steps=1, max_new_tokens=4)
    assert "1 of 2 prompts leave fewer than max_new_tokens (4) positions" in caplog.text
