"""One entry point from a :class:`~psgrpo.config.TaskConfig` to a validated ``datasets.Dataset``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from datasets import Dataset

from psgrpo.data.arith import make_arith_dataset
from psgrpo.data.gsm8k import GSM8K_HUB_ID, load_gsm8k
from psgrpo.data.validation import validate_columns, validate_gold_answers

if TYPE_CHECKING:
    from psgrpo.config import TaskConfig

ARITH_SPLITS = {"train": "train", "validation": "validation", "test": "test", "eval": "test"}


def default_template(task: TaskConfig) -> str:
    """The prompt template of a task: the configured one, else 'compact' for arith and 'seed' for GSM8K."""
    if task.prompt_template is not None:
        return task.prompt_template
    return "compact" if task.dataset == "arith" else "tags"


def load_task_split(task: TaskConfig, split: str, limit: int | None = None) -> Dataset:
    """Load ``split`` of the configured dataset, formatted and validated.

    Returns a dataset with at least ``prompt`` and ``answer`` (gold number as text); every
    gold answer parses as a number (else :class:`~psgrpo.data.validation.DatasetValidationError`
    names the row).
    """
    template = default_template(task)
    if task.dataset == "arith":
        if split not in ARITH_SPLITS:
            raise ValueError(f"arith has splits {sorted(ARITH_SPLITS)}, got {split!r}")
        dataset = make_arith_dataset(ARITH_SPLITS[split], n=limit, template=template, chat=task.chat)
    else:
        source = GSM8K_HUB_ID if task.dataset == "gsm8k" else task.dataset
        dataset = load_gsm8k(
            source,
            split=split,
            template=template,
            chat=task.chat,
            system_prompt=task.system_prompt,
            limit=limit,
        )
    name = f"{task.dataset} {split}"
    validate_columns(dataset, ["prompt", "answer"], name=name)
    validate_gold_answers(dataset, "answer", name=name)
    return dataset
