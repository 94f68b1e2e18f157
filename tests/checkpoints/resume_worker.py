"""One tiny training run in its own process, for test_resume_equals_unbroken.py; optionally resumed or killed.

    python resume_worker.py SPEC.json

SPEC (JSON): ``config`` (ProcessGRPOConfig fields), ``resume`` (null, "true" or a checkpoint path),
``kill_step`` and ``kill_when`` (``after_save``: SIGKILL right after checkpoint-``kill_step`` is
committed; ``during_save``: SIGKILL inside its save, after the weights and optimizer are written),
``record`` (where the finished run writes what the test compares, with torch.save).

The model is the embedded warm-started checkpoint (it solves some arith prompts, so the memory bank
fills and rewards vary), on 8 fixed arith rows, one CPU thread.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's psgrpo, whatever is installed

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import TrainerCallback  # noqa: E402

from psgrpo.config.process_grpo_config import ProcessGRPOConfig  # noqa: E402
from psgrpo.data.arith import make_arith_dataset  # noqa: E402
from psgrpo.loading import load_model_and_tokenizer  # noqa: E402
from psgrpo.trainer import ProcessGRPOTrainer  # noqa: E402


class KillAfterSave(TrainerCallback):
    """SIGKILL this process once the checkpoint of ``step`` is written (``on_save`` runs after the commit)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args, state, control, **kwargs) -> None:
        if state.global_step == self.step:
            os.kill(os.getpid(), signal.SIGKILL)


class RecordLogs(TrainerCallback):
    def __init__(self) -> None:
        self.logs: list[dict] = []

    def on_log(self, args, state, control, logs=None, **kwargs) -> None:
        self.logs.append({"step": state.global_step, **(logs or {})})


def kill_during_save(trainer: ProcessGRPOTrainer, step: int) -> None:
    """Make the save of ``step`` SIGKILL the process once weights, optimizer and scheduler are on disk."""
    original = trainer._save_optimizer_and_scheduler

    def save_then_die(output_dir: str) -> None:
        original(output_dir)
        if trainer.state.global_step == step:
            os.kill(os.getpid(), signal.SIGKILL)

    trainer._save_optimizer_and_scheduler = save_then_die


def record_training_inputs(trainer: ProcessGRPOTrainer) -> list[tuple[int, dict]]:
    """``(global_step, inputs)`` of every training micro-step: what the loss was computed on."""
    steps: list[tuple[int, dict]] = []
    original = trainer._prepare_inputs

    def prepare(batch):
        inputs = original(batch)
        if trainer.model.training:
            kept = {k: v.detach().clone() for k, v in inputs.items() if isinstance(v, torch.Tensor)}
            steps.append((trainer.state.global_step, kept))
        return inputs

    trainer._prepare_inputs = prepare
    return steps


def main(spec: dict) -> None:
    torch.set_num_threads(1)
    model, tokenizer = load_model_and_tokenizer(None)
    trainer = ProcessGRPOTrainer(
        model=model,
        args=ProcessGRPOConfig(**spec["config"]),
        train_dataset=make_arith_dataset("train", n=8),
        processing_class=tokenizer,
    )
    if spec.get("kill_when") == "after_save":
        trainer.add_callback(KillAfterSave(spec["kill_step"]))
    elif spec.get("kill_when") == "during_save":
        kill_during_save(trainer, spec["kill_step"])
    logs = RecordLogs()
    trainer.add_callback(logs)
    steps = record_training_inputs(trainer)
    trainer.train(resume_from_checkpoint=spec.get("resume"))
    rng = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    record = {
        "steps": steps,
        "logs": logs.logs,
        "params": {name: p.detach().clone() for name, p in trainer.model.named_parameters()},
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.lr_scheduler.state_dict(),
        "rng": rng,
        "techniques": {name: obj.state_dict() for name, obj in trainer._technique_states().items()},
        "beta": trainer.beta,
        "trl_step": trainer._step,
        "completion_tokens_seen": trainer.completion_tokens_seen,
    }
    torch.save(record, spec["record"])


if __name__ == "__main__":
    main(json.loads(Path(sys.argv[1]).read_text()))
