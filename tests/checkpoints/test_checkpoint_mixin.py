"""CheckpointMixin inside real ProcessGRPOTrainer runs (tiny model from config, 2 CPU steps)."""

from __future__ import annotations

import json

import pytest
import torch
from trainer_helpers import length_reward, tiny_run_args

from psgrpo.checkpoints.atomic import MARKER, incomplete_reason
from psgrpo.checkpoints.sampler import EpochRepeatSampler
from psgrpo.checkpoints.trainer_mixin import ROLLOUT_FILE
from psgrpo.config.process_grpo_config import ProcessGRPOConfig
from psgrpo.data.arith import make_arith_dataset
from psgrpo.eval.trained_on import TASK_RECORD, read_run_record
from psgrpo.metrics_log import read_metrics
from psgrpo.techniques.state import STATE_FILE
from psgrpo.trainer import ProcessGRPOTrainer

pytestmark = pytest.mark.slow  # each test trains and saves checkpoints: `make test-fast` skips it


def _trainer(tmp_path, model, tokenizer, **overrides):
    args = tiny_run_args(tmp_path, max_steps=2, max_completion_length=8, save_strategy="steps", save_steps=1)
    return ProcessGRPOTrainer(
        model=model,
        reward_funcs=[length_reward],
        args=ProcessGRPOConfig(**{**args, **overrides}),
        train_dataset=make_arith_dataset("train", n=8),
        eval_dataset=make_arith_dataset("validation", n=8),
        processing_class=tokenizer,
    )


def test_checkpoints_are_committed_with_rollout_and_technique_state(tmp_path, tiny_model, char_tokenizer):
    """steps_per_generation=2: checkpoint-1 falls inside the generation cycle, so it holds TRL's buffered batches."""
    trainer = _trainer(
        tmp_path,
        tiny_model,
        char_tokenizer,
        steps_per_generation=2,
        memory_bank=True,
        reward_norm_momentum=0.9,
    )
    assert isinstance(trainer._get_train_sampler(), EpochRepeatSampler)
    trainer.train()
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir() if "checkpoint" in p.name) == ["checkpoint-1", "checkpoint-2"]
    for step in (1, 2):
        checkpoint = out / f"checkpoint-{step}"
        assert incomplete_reason(checkpoint) is None
        files = json.loads((checkpoint / MARKER).read_text())["files"]
        assert {ROLLOUT_FILE, STATE_FILE, "trainer_state.json", "rng_state.pth", "optimizer.pt"} <= set(files)
    mid_cycle = torch.load(out / "checkpoint-1" / ROLLOUT_FILE, weights_only=True)
    assert mid_cycle["step"] == 1 and len(mid_cycle["buffered_inputs"]) == 2
    # the buffer of the one generation (step 0) is what step 1 trained on, and what the trainer still holds
    for saved, held in zip(mid_cycle["buffered_inputs"], trainer._buffered_inputs, strict=True):
        assert saved.keys() == held.keys()
        for key, value in saved.items():
            assert torch.equal(value, held[key]) if isinstance(value, torch.Tensor) else value == held[key]
    at_cycle_start = torch.load(out / "checkpoint-2" / ROLLOUT_FILE, weights_only=True)
    assert at_cycle_start["step"] == 2 and at_cycle_start["buffered_inputs"] is None  # regenerated anyway
    assert at_cycle_start["completion_tokens_seen"] == trainer.completion_tokens_seen > 0


def test_the_run_record_is_part_of_each_committed_checkpoint(tmp_path, tiny_model, char_tokenizer):
    """psgrpo train's task record is written before the commit and listed in the marker: a checkpoint that counts
    as complete always names its task and method (a resume with another method is refused on it)."""
    trainer = _trainer(tmp_path, tiny_model, char_tokenizer)
    trainer.run_record = {"dataset": "arith", "method": "ps"}
    trainer.train()
    for step in (1, 2):
        checkpoint = tmp_path / "out" / f"checkpoint-{step}"
        assert TASK_RECORD in json.loads((checkpoint / MARKER).read_text())["files"]
        assert read_run_record(checkpoint) == {"dataset": "arith", "method": "ps"}
    _trainer(tmp_path / "api", tiny_model, char_tokenizer, max_steps=1).train()  # the Python API: its method
    assert read_run_record(tmp_path / "api" / "out" / "checkpoint-1") == {"method": "grpo"}


def test_save_total_limit_keeps_only_the_committed_checkpoint(tmp_path, tiny_model, char_tokenizer):
    _trainer(tmp_path, tiny_model, char_tokenizer, save_total_limit=1).train()
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if "checkpoint" in p.name) == ["checkpoint-2"]


def test_resuming_from_an_incomplete_checkpoint_is_an_error(tmp_path, tiny_model, char_tokenizer):
    trainer = _trainer(tmp_path, tiny_model, char_tokenizer)
    with pytest.raises(ValueError, match="no complete checkpoint"):
        trainer.train(resume_from_checkpoint="true")
    half = tmp_path / "out" / "checkpoint-1"
    tiny_model.save_pretrained(half)  # weights only: no optimizer, trainer state or marker
    with pytest.raises(ValueError, match=f"cannot resume from {half}: it has no {MARKER}"):
        trainer.train(resume_from_checkpoint=str(half))
    assert trainer.state.global_step == 0


def test_best_model_checkpoint_names_the_committed_directory(tmp_path, tiny_model, char_tokenizer):
    """transformers records the best checkpoint's path while saving; it must be the final path, not the staging one."""
    trainer = _trainer(
        tmp_path,
        tiny_model,
        char_tokenizer,
        eval_strategy="steps",
        eval_steps=1,
        metric_for_best_model="loss",
        greater_is_better=False,
        load_best_model_at_end=True,
        per_device_eval_batch_size=8,
    )
    trainer.train()  # load_best_model_at_end loads state.best_model_checkpoint: it must exist
    best = trainer.state.best_model_checkpoint
    assert (
        best in {str(tmp_path / "out" / f"checkpoint-{s}") for s in (1, 2)}
        and incomplete_reason(best) is None
    )
    saved = json.loads((tmp_path / "out" / "checkpoint-2" / "trainer_state.json").read_text())
    assert saved["best_model_checkpoint"] == best


def test_a_fresh_run_into_a_folder_with_a_run_is_warned_about(tmp_path, tiny_model, char_tokenizer, caplog):
    """The Python API's rerun of the README snippet: `psgrpo train` refuses it, the trainer says what happens."""
    first = _trainer(tmp_path, tiny_model, char_tokenizer, max_steps=1, save_strategy="no")
    with caplog.at_level("WARNING", logger="psgrpo.checkpoints.trainer_mixin"):
        first.train()
        assert not caplog.records  # an empty folder: nothing to say
        _trainer(tmp_path, tiny_model, char_tokenizer, max_steps=1, save_strategy="no").train()
    (warning,) = [r.getMessage() for r in caplog.records]
    assert f"output_dir {tmp_path / 'out'} already holds a run (metrics.jsonl)" in warning
    assert "it holds no complete checkpoint to resume from, so give a new output_dir" in warning  # saved none


def test_the_python_api_resumes_as_the_command_does(tmp_path, tiny_model, char_tokenizer):
    """From Python, a checkpoint at max_steps trained one step past it (checkpoint-3 of a 2-step run), and the
    config's resume_from_checkpoint was ignored (the run started again at step 0); psgrpo train refused the
    first and honoured the second (a review, 2026-12-07)."""
    _trainer(tmp_path, tiny_model, char_tokenizer).train()
    with pytest.raises(
        ValueError, match=r"checkpoint-2 is at step 2 and max_steps is 2, .* raise max_steps above"
    ):
        _trainer(tmp_path, tiny_model, char_tokenizer).train(resume_from_checkpoint=True)
    resumed = _trainer(tmp_path, tiny_model, char_tokenizer, max_steps=3, resume_from_checkpoint="true")
    resumed.train()  # no argument: the config's resume_from_checkpoint
    assert resumed.state.global_step == 3
    steps = [r["step"] for r in read_metrics(tmp_path / "out") if "loss" in r]
    assert steps == [1, 2, 3]  # the resumed run went on from step 2, and logged each step once
