"""Shared pieces of the trainer tests: a reward with guaranteed variance, tiny-run settings, a batch recorder."""

from __future__ import annotations

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
