"""``CheckpointMixin``: atomic checkpoints and a resume that continues exactly like the unbroken run.

Mixed into :class:`~psgrpo.trainer.ProcessGRPOTrainer` in front of ``trl.GRPOTrainer``:

* ``train(resume_from_checkpoint=...)``: ``true`` (bool or string) resumes from the newest
  *complete* checkpoint, skipping incomplete ones with a warning; an explicit incomplete one is an
  error (:func:`~psgrpo.checkpoints.atomic.resolve_resume_checkpoint`).
* ``_save_checkpoint``: transformers and TRL write into the staging root ``partial-checkpoint-N``
  (``_get_output_dir`` points there while saving), then :meth:`_save_checkpoint_extras` adds
  psgrpo's state (and ``run_record``, what ``psgrpo train`` trains on, as ``psgrpo_task.json``), every process waits for the others, and the main process commits (marker,
  fsync, rename) and rotates (:mod:`psgrpo.checkpoints.atomic`).
* Rollout state, one file per process: TRL's micro-step counter ``_step`` (it decides when to
  generate; TRL restarts it at 0 on resume) and, when the checkpoint falls inside a generation
  cycle (``steps_per_generation`` or ``num_iterations`` > 1), the buffered generation batches the
  next steps train on. Without them a resumed run would generate anew with the current policy.
* ``_get_train_sampler``: TRL's sampler, made epoch-addressable (:mod:`psgrpo.checkpoints.sampler`);
  ``_run_epoch`` gives it the epoch itself, through any wrapper (a resumed epoch on several processes).

Everything else is transformers' own checkpoint: weights, optimizer, LR scheduler, RNG states
(restored before the first resumed batch is generated), trainer state.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import torch
from transformers.trainer import TRAINER_STATE_NAME
from trl.trainer.utils import RepeatSampler

from psgrpo.checkpoints.atomic import (
    checkpoint_name,
    commit_checkpoint,
    rotate_checkpoints,
    staging_root,
)
from psgrpo.checkpoints.sampler import EpochRepeatSampler, set_sampler_epoch
from psgrpo.eval.trained_on import write_record

ROLLOUT_FILE = "psgrpo_rollout.pt"

logger = logging.getLogger(__name__)


def rollout_file(process_index: int, world_size: int) -> str:
    """This process's rollout-state file name (one per process, like transformers' ``rng_state_{i}.pth``)."""
    return ROLLOUT_FILE if world_size <= 1 else f"psgrpo_rollout_{process_index}.pt"


def warn_earlier_run(output_dir: str) -> None:
    """Warn when a fresh run starts in a folder that holds an earlier one (Python API; ``psgrpo train`` refuses
    before loading, :func:`psgrpo.preflight.check_no_earlier_run`): the two would share its ``metrics.jsonl``."""
    from psgrpo.preflight import earlier_run, ways_on

    found = earlier_run(output_dir)
    if found:
        logger.warning(
            "output_dir %s already holds a run (%s): this run appends to its metrics.jsonl and writes its model "
            "and checkpoints over it; %s",
            output_dir,
            ", ".join(found),
            ways_on(output_dir, resume="train(resume_from_checkpoint=True)", output_dir="output_dir"),
        )


class CheckpointMixin:
    """Checkpoint overrides of ``trl.GRPOTrainer``; subclasses add state with :meth:`_save_checkpoint_extras`."""

    _checkpoint_staging: Path | None = None
    run_record: dict[str, Any] | None = None
    """The task and method the run trains on (:func:`psgrpo.eval.trained_on.run_record`; ``psgrpo train`` sets
    it), written into every checkpoint before its commit: ``psgrpo eval`` reads it, and a resume with another
    ``--method`` or ``--dataset`` is refused on it. ``ProcessGRPOTrainer`` sets ``{"method": …}``; ``None`` writes
    none."""

    def train(self, resume_from_checkpoint: str | bool | None = None, *args: Any, **kwargs: Any) -> Any:
        """``Trainer.train``, resuming from ``resume_from_checkpoint`` or, when that is ``None``, from the config's
        ``resume_from_checkpoint`` (what ``psgrpo train`` passes; transformers alone ignores the field).

        Raises:
            ValueError: the checkpoint has already trained ``max_steps`` steps (transformers would train one
                step past it), or was trained with another ``method``.
        """
        from psgrpo.preflight import check_resume_target

        if resume_from_checkpoint is None:
            resume_from_checkpoint = getattr(self.args, "resume_from_checkpoint", None)
        checkpoint = check_resume_target(
            resume_from_checkpoint,
            self.args.output_dir,
            self.args.max_steps,
            getattr(self.args, "method", None),
            api=True,
        )
        if checkpoint is None and self.is_world_process_zero():
            warn_earlier_run(self.args.output_dir)
        return super().train(checkpoint, *args, **kwargs)

    def _get_output_dir(self, trial: Any) -> str:
        # inside _save_checkpoint, transformers and TRL write everything into the staging root
        if self._checkpoint_staging is not None:
            return str(self._checkpoint_staging)
        return super()._get_output_dir(trial)

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        run_dir = Path(self._get_output_dir(trial))
        step = self.state.global_step
        staging = staging_root(run_dir, step)
        staged, final = staging / checkpoint_name(step), run_dir / checkpoint_name(step)
        if self.args.should_save and staging.exists():  # left by a save that was killed
            shutil.rmtree(staging)
        self.accelerator.wait_for_everyone()
        self._checkpoint_staging = staging
        try:
            super()._save_checkpoint(model, trial)
        finally:
            self._checkpoint_staging = None
        if self.state.best_model_checkpoint == str(staged):  # transformers recorded the staging path
            self.state.best_model_checkpoint = str(final)
            if self.args.should_save:
                self.state.save_to_json(str(staged / TRAINER_STATE_NAME))
        self._save_checkpoint_extras(staged)
        self.accelerator.wait_for_everyone()  # every process's files (RNG, rollout, shards) are written
        if self.args.should_save:
            commit_checkpoint(staged, final, step)
            rotate_checkpoints(run_dir, self.args.save_total_limit, final, self.state.best_model_checkpoint)
        self.accelerator.wait_for_everyone()

    def _save_checkpoint_extras(self, checkpoint: Path) -> None:
        """Write psgrpo's state into the staged ``checkpoint``, on every process, before the commit."""
        generate_every = self.args.steps_per_generation * self.num_iterations
        state = {
            "step": self._step,
            # the buffer is regenerated at a cycle start anyway; inside a cycle the next steps train on it
            "buffered_inputs": self._buffered_inputs if self._step % generate_every else None,
            "completion_tokens_seen": getattr(self, "completion_tokens_seen", None),
        }
        checkpoint.mkdir(parents=True, exist_ok=True)
        name = rollout_file(self.accelerator.process_index, self.accelerator.num_processes)
        torch.save(state, checkpoint / name)
        if self.run_record is not None and self.args.should_save:
            write_record(checkpoint, self.run_record)

    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None:
            self._load_rollout_state(Path(checkpoint))

    def _load_rollout_state(self, checkpoint: Path) -> None:
        path = checkpoint / rollout_file(self.accelerator.process_index, self.accelerator.num_processes)
        if not path.is_file():
            logger.warning(
                "checkpoint %s has no %s (saved by another number of processes?): TRL generates anew at the first "
                "resumed step, so the run continues but not exactly as it would have without the break",
                checkpoint,
                path.name,
            )
            return
        state = torch.load(path, map_location=self.accelerator.device, weights_only=True)
        self._step = state["step"]
        self._buffered_inputs = state["buffered_inputs"]
        if state["completion_tokens_seen"] is not None:
            self.completion_tokens_seen = state["completion_tokens_seen"]

    def _get_train_sampler(self, dataset: Any = None) -> Any:
        sampler = super()._get_train_sampler(dataset)
        return EpochRepeatSampler.like(sampler) if type(sampler) is RepeatSampler else sampler

    def _run_epoch(self, *args: Any, **kwargs: Any) -> Any:
        # transformers' and accelerate's set_epoch stop at the SkipBatchSampler of a resumed epoch on several
        # processes: the sampler would shuffle as in epoch 0 (and the curriculum restart its pool)
        if "epoch" in kwargs and kwargs.get("train_dataloader") is not None:
            set_sampler_epoch(kwargs["train_dataloader"], kwargs["epoch"])
        return super()._run_epoch(*args, **kwargs)
