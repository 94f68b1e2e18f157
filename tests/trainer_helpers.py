"""Shared pieces of the trainer tests: a reward with guaranteed variance, tiny-run settings, a batch recorder,
fixed rollouts (known completions with checkable steps instead of sampling)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch


def length_reward(completions, **kwargs):
    """Reward = length/10: guarantees reward variance inside every group, so advantages are non-zero."""
    return [len(c) / 10.0 for c in completions]


def tiny_run_args(tmp_path: Path, **overrides) -> dict:
    """Config fields for a one-step CPU run of a tiny model (override anything)."""
    args = dict(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=24,
        learning_rate=1e-3,
        beta=0.0,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
    )
    args.update(overrides)
    return args


def record_batches(trainer) -> list[dict]:
    """Wrap ``_generate_and_score_completions`` and keep a detached copy of every output dict."""
    outputs: list[dict] = []
    original = trainer._generate_and_score_completions

    def recorder(inputs):
        out = original(inputs)
        outputs.append({k: v.detach().clone() if isinstance(v, torch.Tensor) else v for k, v in out.items()})
        return out

    trainer._generate_and_score_completions = recorder
    return outputs


WALL_CLOCK = ("runtime", "_per_second", "step_time", "psgrpo/advantage_seconds")
"""Logged keys that measure time: compared for presence only."""


def assert_same_logs(ours: list[dict], ref: list[dict], own: tuple[str, ...] = ("psgrpo/",)) -> None:
    """psgrpo's ``log_history`` holds stock TRL's: the same entries, keys and values (exactly; timings aside).

    psgrpo may add keys of its own (containing one of ``own``, e.g. ``eval_psgrpo/…``), nothing else.
    """
    assert len(ours) == len(ref), f"{len(ours)} log entries, stock TRL has {len(ref)}"
    for step, (our, theirs) in enumerate(zip(ours, ref, strict=True)):
        extra = {k for k in set(our) - set(theirs) if not any(prefix in k for prefix in own)}
        assert not extra and set(theirs) <= set(our), f"log {step}: keys differ: {set(our) ^ set(theirs)}"
        for key, value in theirs.items():
            if key.endswith(WALL_CLOCK):
                continue
            same = our[key] == value or (
                isinstance(value, float) and math.isnan(value) and math.isnan(our[key])
            )
            assert same, f"log {step}: {key} = {our[key]!r}, stock TRL logs {value!r}"


def save_tiny_model(path: Path, tokenizer) -> Path:
    """Save the tests' tiny random Qwen2 (2 layers, hidden 32) to ``path``; with beta > 0 TRL loads the
    reference model from the policy's path, so runs that compare with it load the policy from disk."""
    from psgrpo.tiny.model import build_tiny_model

    build_tiny_model(tokenizer, seed=0, hidden_size=32, num_layers=2, intermediate_size=64).save_pretrained(
        path
    )
    return path


def save_tiny_prm(path: Path, tokenizer) -> Path:
    """Save a random 1-layer token-classification PRM (2 labels) and ``tokenizer`` to ``path``."""
    from transformers import Qwen2ForTokenClassification

    from psgrpo.tiny.model import tiny_qwen2_config

    config = tiny_qwen2_config(
        len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_layers=1,
        num_labels=2,
        pad_token_id=tokenizer.pad_token_id,
    )
    Qwen2ForTokenClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def thread_names() -> list[str]:
    """Names of this process's native threads, from /proc (Linux); empty where there is no /proc."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return []
    return sorted((tasks / t / "comm").read_text().strip() for t in os.listdir(tasks))


FIXED_COMPLETIONS = [
    "<reasoning>\nStep 1: 4 + 1 = 5\nStep 2: 5 * 2 = 10\n</reasoning>\n<answer>10</answer>",
    "<reasoning>\nStep 1: 4 + 1 = 6\nStep 2: 6 * 2 = 12\n</reasoning>\n<answer>12</answer>",
    "<reasoning>\nStep 1: 3 * 3 = 9\n</reasoning>\n<answer>9</answer>",
    "Step 1: 7 - 2 = 5\nStep 2: 5 + 5 = 11\nStep 3: 11 * 2 = 22\n<answer>22</answer>",
    "<reasoning>\n2 + 2 = 4\n4 + 4 = 8\n8 + 8 = 16\n</reasoning>\n<answer>16</answer>",
    "the answer is 7",
    "<reasoning>\nStep 1: 10 / 2 = 5\nStep 2: 5 - 1 = 4\n",  # no EOS: a truncated completion
]
"""Completions with right and wrong arithmetic steps, so PS-GRPO's verifier gives step credit that varies."""
FIXED_TRUNCATED = {len(FIXED_COMPLETIONS) - 1}


def fixed_completion(row: int, step: int, num_generations: int = 4) -> int:
    """Index into FIXED_COMPLETIONS for global row ``row`` of the generation batch at ``step``.

    Every third group gets ``num_generations`` identical completions (a zero-variance group); the
    others get different ones.
    """
    group, member = divmod(row, num_generations)
    if group % 3 == 2:
        return (group + step) % len(FIXED_COMPLETIONS)
    return (group + 2 * member + 3 * step) % len(FIXED_COMPLETIONS)


class FixedRollouts:
    """Mixin for a ``GRPOTrainer`` (TRL's or psgrpo's): completions come from FIXED_COMPLETIONS by global row.

    Only generation changes: prompts, rewards, advantages, probes and the loss are the real code.
    With ``generate_first`` TRL's own generation runs first (so generation options are exercised)
    and its output is then replaced.
    """

    generate_first = False

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, **kwargs):
        if self.generate_first:
            super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations, **kwargs)
        offset = self.accelerator.process_index * len(prompt_ids)
        completions = []
        for i in range(len(prompt_ids)):
            choice = fixed_completion(offset + i, self.state.global_step, self.num_generations)
            ids = self._tokenizer(FIXED_COMPLETIONS[choice], add_special_tokens=False)["input_ids"]
            completions.append(ids if choice in FIXED_TRUNCATED else [*ids, self._tokenizer.eos_token_id])
        return completions, None
