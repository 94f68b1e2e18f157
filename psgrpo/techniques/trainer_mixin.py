"""``TechniquesMixin``: the ``GRPOTrainer`` overrides that switch the training techniques on.

Mixed into :class:`~psgrpo.trainer.ProcessGRPOTrainer` in front of ``trl.GRPOTrainer``. Each
technique touches TRL where TRL exposes the quantity it changes:

* KL schedule → ``self.beta`` (read by TRL's loss), set by a callback before every optimizer step;
* curriculum → ``_get_train_sampler`` (TRL's ``RepeatSampler`` layout, easy prompts first);
* flat LR warm-up → ``create_scheduler``;
* running reward normalisation → the group advantages, recomputed from normalised summed rewards
  (``_calculate_rewards`` returns the rewards of the whole batch, gathered across processes);
* memory bank → ``_generate`` (a banked completion replaces one member of an all-wrong group before
  TRL scores it, so rewards, advantages, reference log-probs and logs are TRL's own), then its old
  log-probs are set to the stored behaviour log-probs;
* checkpoints → the bank and reward statistics are saved next to the trainer state (in
  ``_save_checkpoint_extras``, :mod:`psgrpo.checkpoints.trainer_mixin`, before the checkpoint is
  committed) and restored in ``_load_optimizer_and_scheduler`` (where TRL restores its own extra state).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import gather_object
from trl.models.utils import disable_gradient_checkpointing

from psgrpo.distributed import local_rows
from psgrpo.techniques.curriculum import CurriculumRepeatSampler, check_difficulties
from psgrpo.techniques.kl_schedule import KLScheduleCallback
from psgrpo.techniques.lr_warmup import flat_warmup_scheduler
from psgrpo.techniques.memory_bank import (
    BankEntry,
    MemoryBank,
    is_correct,
    plan_rescues,
    prompt_key,
    select_new_entries,
)
from psgrpo.techniques.reward_norm import RunningRewardStats, group_advantages, weighted_rewards
from psgrpo.techniques.state import load_technique_state, save_technique_state


class TechniquesMixin:
    """Technique overrides of ``trl.GRPOTrainer``; ``self.args`` is a ``ProcessGRPOConfig``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        config = self.args
        if config.kl_schedule != "none":
            self.add_callback(KLScheduleCallback(self))
        if config.curriculum != "none":
            self._curriculum_difficulties()  # fail at construction, not at the first batch
        self.reward_normalizer = (
            RunningRewardStats(config.reward_norm_momentum)
            if config.reward_norm_momentum is not None
            else None
        )
        self.memory_bank = MemoryBank(config.memory_bank_size) if config.memory_bank else None
        if self.memory_bank is not None:
            self._check_memory_bank_support()
        self._rescued_rows: dict[int, str] = {}

    def _technique_states(self) -> dict[str, Any]:
        states = {"memory_bank": self.memory_bank, "reward_norm": self.reward_normalizer}
        return {name: obj for name, obj in states.items() if obj is not None}

    def _save_checkpoint_extras(self, checkpoint: Path) -> None:
        super()._save_checkpoint_extras(checkpoint)
        if self.args.should_save and self._technique_states():
            save_technique_state(self._technique_states(), checkpoint)

    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None and self._technique_states():
            load_technique_state(self._technique_states(), checkpoint)

    # ---- curriculum ------------------------------------------------------------------------
    def _get_train_sampler(self, dataset: Any = None) -> Any:
        if self.args.curriculum == "none":
            return super()._get_train_sampler(dataset)
        config = self.args
        repeat_count = self.num_iterations * config.steps_per_generation
        return CurriculumRepeatSampler(
            self._curriculum_difficulties(),
            mini_repeat_count=self.num_generations,
            batch_size=config.generation_batch_size // self.num_generations,
            repeat_count=repeat_count,
            steps_per_chunk=repeat_count / config.gradient_accumulation_steps,
            curriculum_steps=config.curriculum_steps or config.max_steps,
            start_fraction=config.curriculum_start_fraction,
            schedule=config.curriculum,
            seed=config.seed,
        )

    def _curriculum_difficulties(self) -> list[float]:
        """The difficulty of every train row; ValueError saying how to add the column when it is missing."""
        column, dataset = self.args.curriculum_difficulty_column, self.train_dataset
        names = getattr(dataset, "column_names", None)
        if names is None or not hasattr(dataset, "__len__"):
            raise ValueError("curriculum needs a map-style train dataset (a datasets.Dataset), not a stream")
        if column not in names:
            raise ValueError(
                f"curriculum={self.args.curriculum!r} needs a numeric {column!r} column in the train dataset "
                f"(higher = harder); its columns are {names}. psgrpo's arith and GSM8K loaders add 'difficulty'. "
                f"For other data add one, e.g. dataset = dataset.map(lambda row: {{'{column}': "
                "len(row['solution'].splitlines())}), or name an existing column with "
                "--curriculum_difficulty_column."
            )
        return check_difficulties(list(dataset[column]), column)

    # ---- flat learning-rate warm-up --------------------------------------------------------
    def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
        if self.args.warmup_lr is None or self.lr_scheduler is not None:
            return super().create_scheduler(num_training_steps, optimizer)
        config = self.args
        self.lr_scheduler = flat_warmup_scheduler(
            optimizer if optimizer is not None else self.optimizer,
            config.lr_scheduler_type,
            learning_rate=config.learning_rate,
            warmup_lr=config.warmup_lr,
            warmup_steps=config.get_warmup_steps(num_training_steps),
            num_training_steps=num_training_steps,
            scheduler_kwargs=config.lr_scheduler_kwargs,
        )
        self._created_lr_scheduler = True
        return self.lr_scheduler

    # ---- rollout hooks: reward normalisation and memory bank --------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list) -> torch.Tensor:
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self.step_record.rewards_per_func = rewards_per_func  # (N, F), all processes' rows
        return rewards_per_func

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        if self.model.training:
            if self.reward_normalizer is not None:
                self._normalize_rewards(output)
            if self.memory_bank is not None:
                self._update_memory_bank(output)
        return output

    def _normalize_rewards(self, output: dict[str, Any]) -> None:
        """Replace TRL's group advantages by those of EMA-normalised summed rewards."""
        rewards = weighted_rewards(self.step_record.rewards_per_func, self.reward_weights)
        self.reward_normalizer.update(rewards)
        normalized = self.reward_normalizer.normalize(rewards)
        advantages = group_advantages(normalized, self.num_generations, self.scale_rewards)
        output["advantages"] = advantages[local_rows(self.accelerator, len(output["advantages"]))]
        self._metrics["train"]["reward_norm/mean"].append(self.reward_normalizer.mean)
        self._metrics["train"]["reward_norm/std"].append(self.reward_normalizer.std)

    def _generate(self, prompts: list[Any]) -> tuple:
        """TRL's rollout; then, in training with a memory bank, banked completions into all-wrong groups."""
        result = super()._generate(prompts)
        self._rescued_rows = {}
        if self.memory_bank is None or not self.model.training:
            return result
        prompt_ids, completion_ids, tool_mask, completions, logprobs, extra_fields, images, tool_images = (
            result
        )
        inputs = self.step_record.inputs  # the rows of this batch (their gold answers)
        keys = gather_object([prompt_key(x["prompt"]) for x in inputs])
        correct = gather_object(
            [is_correct(c, x["answer"]) for c, x in zip(completions, inputs, strict=True)]
        )
        self._rescued_rows = plan_rescues(keys, correct, self.num_generations, self.memory_bank)
        local = local_rows(self.accelerator, len(prompts))
        for row, key in self._rescued_rows.items():
            if local.start <= row < local.stop:
                entry, i = self.memory_bank.peek(key), row - local.start
                completion_ids[i] = list(entry.completion_ids)
                completions[i] = copy.deepcopy(entry.completion)
                if logprobs is not None:  # vLLM's sampling log-probs: keep one per token
                    logprobs[i] = list(entry.logps)
        self._rollout = {
            "keys": keys,
            "correct": [c or row in self._rescued_rows for row, c in enumerate(correct)],
            "lengths": gather_object([len(ids) for ids in completion_ids]),
            "completions": completions,
        }
        self._metrics["train"]["memory/groups_rescued"].append(float(len(self._rescued_rows)))
        return prompt_ids, completion_ids, tool_mask, completions, logprobs, extra_fields, images, tool_images

    def _update_memory_bank(self, output: dict[str, Any]) -> None:
        """Give replayed rows their behaviour log-probs as old log-probs; bank this batch's best correct rows."""
        if output.get("old_per_token_logps") is None:
            output["old_per_token_logps"] = self._current_logps(output)
        old, ids = output["old_per_token_logps"], output["completion_ids"]
        local = local_rows(self.accelerator, ids.size(0))
        for row, key in self._rescued_rows.items():
            if local.start <= row < local.stop:
                logps = torch.tensor(self.memory_bank.peek(key).logps, dtype=old.dtype, device=old.device)
                old[row - local.start, : len(logps)] = logps
                if "importance_sampling_ratio" in output:  # vLLM correction: the ratio above is already exact
                    output["importance_sampling_ratio"][row - local.start] = 1.0
        rollout = self._rollout
        rewards = weighted_rewards(self.step_record.rewards_per_func, self.reward_weights).tolist()
        rows = select_new_entries(
            rollout["keys"],
            rollout["correct"],
            rewards,
            rollout["lengths"],
            self.memory_bank,
            exclude=set(self._rescued_rows),
        )
        new_entries = []
        for row in rows:
            if local.start <= row < local.stop:
                i, n = row - local.start, rollout["lengths"][row]
                entry = BankEntry(
                    ids[i, :n].tolist(), old[i, :n].tolist(), rewards[row], rollout["completions"][i]
                )
                new_entries.append((row, entry))
        for row, entry in sorted(gather_object(new_entries), key=lambda pair: pair[0]):
            self.memory_bank.offer(rollout["keys"][row], entry)
        self._metrics["train"]["memory/bank_size"].append(float(len(self.memory_bank)))

    def _current_logps(self, output: dict[str, Any]) -> torch.Tensor:
        """Per-token log-probs (B, T) of the batch's completions under the current (= behaviour) policy."""
        with (
            torch.no_grad(),
            disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs),
        ):
            logps, _, _ = self._get_per_token_logps_and_entropies(
                self.model,
                torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1),
                torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1),
                output["completion_ids"].size(1),
                batch_size=self.args.per_device_train_batch_size,
            )
        return logps

    def _check_memory_bank_support(self) -> None:
        if self.tools or self.rollout_func is not None or self.environment_factories is not None:
            raise ValueError(
                "memory_bank supports single-turn rollouts only (no tools, rollout_func or environments)"
            )
        names = getattr(self.train_dataset, "column_names", None) or []
        if "answer" not in names:
            raise ValueError(
                f"memory_bank needs the gold answer column 'answer' in the train dataset to tell correct completions; "
                f"its columns are {names}"
            )
