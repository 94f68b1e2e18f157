"""Held-out accuracy during training: a ``TrainerCallback`` that draws learning curves.

Every ``every_steps`` optimizer steps (and at step 0 if asked, and always at the last step)
:class:`HeldOutEvalCallback` runs :func:`psgrpo.eval.generation.evaluate_model` greedily on the
held-out rows and logs each returned metric as ``heldout/<key>`` through the trainer's normal
logging, so it reaches TensorBoard (as ``train/heldout/<key>``), ``metrics.jsonl`` and
``trainer.state.log_history``. Next to the evaluation metrics it logs, per evaluation:

- ``heldout/wall_seconds``: wall clock since ``on_train_begin`` when this evaluation started
  (earlier held-out evaluations included);
- ``heldout/train_seconds``: the same minus the time spent in earlier held-out evaluations,
  i.e. what training alone took to reach this step;
- ``heldout/eval_seconds``: how long this evaluation took;
- ``heldout/completion_tokens``: training completion tokens generated so far over all processes
  (``ProcessGRPOTrainer.completion_tokens_seen``; absent with a trainer that does not count them).

Multi-process runs (DDP, DeepSpeed): every process enters TRL's ``unwrap_model_for_generation``
(which gathers ZeRO-3 parameters collectively), only the main process generates, the others
wait at a barrier, and the metrics are broadcast so every process logs the same record. The
evaluation is therefore as slow as one process's generation over all rows; keep the held-out
set small (or raise ``ddp_timeout``) when a process could wait longer than the collective
timeout. FSDP is refused with an error (its parameters cannot be gathered this way).

With ``cache_dir`` the step-0 evaluation is looked up in (and added to) a content-addressed cache
(:mod:`psgrpo.eval.heldout_cache`): runs that start from the same weights and evaluate the same rows
the same way, such as every run of a ``psgrpo compare``, evaluate step 0 once. A reused evaluation
logs the same metrics and ``heldout/eval_seconds`` of the time the lookup took.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from accelerate.utils import broadcast_object_list
from datasets import Dataset
from transformers import Trainer, TrainerCallback
from trl.models.utils import unwrap_model_for_generation

from psgrpo.data.validation import check_prompts_fit_context
from psgrpo.eval import heldout_cache
from psgrpo.eval.generation import evaluate_model, prompt_ids, stop_token_ids
from psgrpo.vps.probes import model_max_positions

logger = logging.getLogger(__name__)

PREFIX = "heldout/"


class HeldOutEvalCallback(TrainerCallback):
    """Greedy held-out evaluation every ``every_steps`` optimizer steps, logged as ``heldout/*``.

    Args:
        trainer: the trainer to evaluate and log through (its ``processing_class`` is the tokenizer).
        eval_dataset: held-out rows with ``prompt`` and ``answer`` columns.
        every_steps: evaluate when ``global_step % every_steps == 0`` (≥ 1).
        eval_on_start: also evaluate before the first update (only when training starts at step 0).
        max_new_tokens / batch_size: passed to :func:`~psgrpo.eval.generation.evaluate_model`.
        cache_dir: a folder for the step-0 evaluation cache (None: always evaluate).

    Use: ``trainer.add_callback(HeldOutEvalCallback(trainer, eval_dataset, every_steps=20))``.
    """

    def __init__(
        self,
        trainer: Trainer,
        eval_dataset: Dataset,
        every_steps: int,
        eval_on_start: bool = True,
        max_new_tokens: int = 256,
        batch_size: int = 32,
        cache_dir: str | None = None,
    ) -> None:
        if every_steps < 1:
            raise ValueError(f"heldout_eval_steps must be a positive number of steps, got {every_steps}")
        if getattr(trainer, "is_fsdp_enabled", False):
            raise ValueError(
                "held-out evaluation during training does not support FSDP (the main process cannot generate "
                "with sharded parameters); set heldout_eval_steps 0 and run `psgrpo eval` on saved checkpoints"
            )
        # once, on every process, before training: at an evaluation only the main process generates, and a
        # refusal there would leave the others waiting
        tight = check_prompts_fit_context(
            eval_dataset,
            "held-out set",
            lambda prompt: len(
                prompt_ids(trainer.processing_class, prompt, chat_template_kwargs(trainer.args))
            ),
            model_max_positions(trainer.model),
            max_new_tokens,
            length_option="max_new_tokens",
        )
        if tight and trainer.args.process_index == 0:
            logger.warning(tight)
        self.trainer = trainer
        self.eval_dataset = eval_dataset
        self.every_steps = every_steps
        self.eval_on_start = eval_on_start
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self._start = 0.0
        self._eval_seconds_total = 0.0
        self._last_step: int | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()
        self._eval_seconds_total = 0.0
        if self.eval_on_start and state.global_step == 0:
            self._evaluate_and_log(args, state, control)
        return control

    def on_step_end(self, args, state, control, **kwargs):
        # DefaultFlowCallback runs first and has already set should_training_stop on the last step.
        if state.global_step % self.every_steps == 0 or control.should_training_stop:
            self._evaluate_and_log(args, state, control)
        return control

    def _evaluate_and_log(self, args, state, control) -> None:
        if self._last_step == state.global_step:  # e.g. the last step is also a multiple of every_steps
            return
        self._last_step = state.global_step
        wall = time.perf_counter() - self._start
        metrics = self._evaluate(args, cached=self.cache_dir is not None and state.global_step == 0)
        seconds = time.perf_counter() - self._start - wall
        logs: dict[str, float] = {PREFIX + key: value for key, value in metrics.items()}
        logs[PREFIX + "wall_seconds"] = wall
        logs[PREFIX + "train_seconds"] = wall - self._eval_seconds_total
        logs[PREFIX + "eval_seconds"] = seconds
        tokens = getattr(self.trainer, "completion_tokens_seen", None)
        if tokens is not None:
            logs[PREFIX + "completion_tokens"] = float(tokens)
        self._eval_seconds_total += seconds
        # transformers.Trainer.log, not the trainer's own: TRL's GRPOTrainer.log would flush (and clear) the
        # training metrics accumulated since the last logging step into this record. Logging resets
        # control.should_log, which the trainer has yet to act on for this step's training record.
        should_log = control.should_log
        Trainer.log(self.trainer, logs)
        control.should_log = self.trainer.control.should_log = should_log

    def _evaluate(self, args, cached: bool = False) -> dict[str, float]:
        """Generate on the main process only (or, ``cached``, reuse an identical earlier evaluation);
        every process returns the same metrics."""
        accelerator = self.trainer.accelerator
        metrics: dict[str, float] | None = None
        with unwrap_model_for_generation(
            self.trainer.model_wrapped,
            accelerator,
            gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs,
        ) as model:
            if accelerator.is_main_process:
                key = self._cache_key(model, args) if cached else None
                record = heldout_cache.load(self.cache_dir, key) if key else None
                if record is not None:
                    metrics = record["metrics"]
                    logger.info("held-out at step 0: reused %s.json from %s", key, self.cache_dir)
                else:
                    start = time.perf_counter()
                    metrics = evaluate_model(
                        model,
                        self.trainer.processing_class,
                        self.eval_dataset,
                        max_new_tokens=self.max_new_tokens,
                        batch_size=self.batch_size,
                        show_progress=False,
                        chat_template_kwargs=chat_template_kwargs(args),
                        check_context=False,  # checked when the callback was built
                    )
                    if key:
                        try:
                            heldout_cache.store(self.cache_dir, key, metrics, time.perf_counter() - start)
                        except OSError as err:  # a cache is worth less than the run: warn, go on
                            logger.warning("held-out cache %s not written (%s)", self.cache_dir, err)
                logger.info("held-out at step %d: %s", self.trainer.state.global_step, metrics)
            accelerator.wait_for_everyone()
        if accelerator.num_processes > 1:
            metrics = broadcast_object_list([metrics], from_process=0)[0]
        assert metrics is not None
        return metrics

    def _cache_key(self, model, args) -> str:
        """:func:`psgrpo.eval.heldout_cache.evaluation_key` of this evaluation, as ``model`` will run it."""
        settings = {
            "max_new_tokens": self.max_new_tokens,
            "batch_size": self.batch_size,
            "bf16": bool(args.bf16),
            "fp16": bool(args.fp16),
            "device": self.trainer.accelerator.device.type,
            "stop_ids": stop_token_ids(model, self.trainer.processing_class),  # where a completion ends
            "chat_template_kwargs": chat_template_kwargs(args),  # a conversation's prompt, as trained on
        }
        return heldout_cache.evaluation_key(model, self.trainer.processing_class, self.eval_dataset, settings)


def chat_template_kwargs(args: Any) -> dict[str, Any]:
    """The run's ``chat_template_kwargs`` as TRL applies them to its training prompts (``{}`` when unset)."""
    value = getattr(args, "chat_template_kwargs", None)
    return dict(value) if isinstance(value, dict) else {}
