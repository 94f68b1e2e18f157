"""What to train and evaluate on: :class:`TaskConfig`, and :func:`load_task_split`, its one way to a validated dataset."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from datasets import Dataset

from psgrpo.config.options import ArithVariant, check_choice, check_number
from psgrpo.data.arith import ARITH_VARIANTS, make_arith_dataset
from psgrpo.data.gsm8k import GSM8K_HUB_ID, HubLoadError, load_gsm8k
from psgrpo.data.prompts import resolve_template
from psgrpo.data.validation import validate_columns, validate_gold_answers


@dataclass
class TaskConfig:
    """What to train and evaluate on, and the before/after report of ``psgrpo train``."""

    dataset: str = field(
        default="arith",
        metadata={
            "help": "'arith' (embedded synthetic task, default), a harder arith variant ('arith-long': 4-8 steps, "
            "'arith-distractor': an irrelevant fact, 'arith-hard': both; psgrpo.data.arith.ARITH_VARIANTS), 'gsm8k' "
            "(hub id openai/gsm8k), or a local GSM8K-style JSONL file / directory of {split}.jsonl with 'question' and "
            "'answer' (gold after '####')."
        },
    )
    train_split: str = field(default="train", metadata={"help": "Split to train on (default 'train')."})
    eval_split: str = field(
        default="test", metadata={"help": "Held-out split for the before/after evaluation (default 'test')."}
    )
    prompt_template: str | None = field(
        default=None,
        metadata={
            "help": "Prompt template: 'tags' (asks for <reasoning>/<answer> tags), 'compact' or a pattern with "
            "{question}. Default: 'compact' for arith (character-level model), 'tags' otherwise."
        },
    )
    chat: bool = field(
        default=False,
        metadata={
            "help": "Format prompts as chat messages (use with instruct models, e.g. Qwen2.5-Instruct)."
        },
    )
    system_prompt: str | None = field(default=None, metadata={"help": "Optional system message (chat only)."})
    max_train_examples: int | None = field(
        default=None, metadata={"help": "Use only the first N training rows (default: all)."}
    )
    max_eval_examples: int | None = field(
        default=200, metadata={"help": "Evaluate on the first N held-out rows (default 200; None = all)."}
    )
    eval_before_after: bool = field(
        default=True,
        metadata={
            "help": "Evaluate held-out accuracy before and after training and print both (default True)."
        },
    )
    eval_batch_size: int = field(
        default=64, metadata={"help": "Generation batch size of the held-out evaluation."}
    )
    eval_max_new_tokens: int | None = field(
        default=None,
        metadata={"help": "Max new tokens when evaluating. Default: the trainer's max_completion_length."},
    )
    heldout_eval_steps: int = field(
        default=0,
        metadata={
            "help": "Every N optimizer steps, also evaluate greedy accuracy on the held-out split (same rows and "
            "settings as the before/after report) and log it as heldout/* to TensorBoard and metrics.jsonl "
            "(psgrpo.eval.heldout). Default 0 = off. Set it to draw learning curves; each evaluation costs one "
            "pass of generation over max_eval_examples rows. `psgrpo compare` sets it from --eval_every."
        },
    )
    heldout_eval_on_start: bool = field(
        default=True,
        metadata={
            "help": "With heldout_eval_steps > 0: also evaluate at step 0, before the first update (default True), "
            "so curves start at the initial policy. The last step is always evaluated."
        },
    )
    heldout_cache_dir: str | None = field(
        default=None,
        metadata={
            "help": "A folder where the step-0 held-out evaluation is cached by its content (weights, tokenizer, "
            "rows, generation settings, precision: psgrpo.eval.heldout_cache) and reused by any run that would "
            "compute the same thing. Default None = no cache. `psgrpo compare` sets it to OUTPUT_DIR/heldout_cache, "
            "so its runs evaluate the shared starting checkpoint once."
        },
    )

    def __post_init__(self) -> None:
        check_number("max_train_examples", self.max_train_examples, low=1, allow_none=True)
        check_number("max_eval_examples", self.max_eval_examples, low=1, allow_none=True)
        check_number("eval_batch_size", self.eval_batch_size, low=1)
        check_number("eval_max_new_tokens", self.eval_max_new_tokens, low=1, allow_none=True)
        check_number("heldout_eval_steps", self.heldout_eval_steps, low=0)
        if self.prompt_template is not None:
            resolve_template(self.prompt_template)  # a bad name or pattern fails before any loading
        if self.dataset.startswith("arith") and not Path(self.dataset).exists():
            check_choice("dataset", self.dataset, ArithVariant)  # a misspelt variant is not a GSM8K path


ARITH_SPLITS = {"train": "train", "validation": "validation", "test": "test", "eval": "test"}


def default_template(task: TaskConfig) -> str:
    """The prompt template of a task: the configured one, else 'compact' for arith (any variant) and 'tags' for GSM8K."""
    if task.prompt_template is not None:
        return task.prompt_template
    return "compact" if task.dataset in ARITH_VARIANTS else "tags"


def load_task_split(task: TaskConfig, split: str, limit: int | None = None) -> Dataset:
    """Load ``split`` of the configured dataset, formatted and validated.

    Returns a dataset with at least ``prompt`` and ``answer`` (gold number as text); every
    gold answer parses as a number (else :class:`~psgrpo.data.validation.DatasetValidationError`
    names the row).
    """
    template = default_template(task)
    if task.dataset in ARITH_VARIANTS:
        if split not in ARITH_SPLITS:
            raise ValueError(f"{task.dataset} has splits {sorted(ARITH_SPLITS)}, got {split!r}")
        dataset = make_arith_dataset(
            ARITH_SPLITS[split], n=limit, template=template, chat=task.chat, variant=task.dataset
        )
    else:
        source = GSM8K_HUB_ID if task.dataset == "gsm8k" else task.dataset
        try:
            dataset = load_gsm8k(
                source,
                split=split,
                template=template,
                chat=task.chat,
                system_prompt=task.system_prompt,
                limit=limit,
            )
        except HubLoadError as err:  # name the option the user typed
            raise HubLoadError(f"--dataset {task.dataset}: {err}") from err
    name = f"{task.dataset} {split}"
    validate_columns(dataset, ["prompt", "answer"], name=name)
    validate_gold_answers(dataset, "answer", name=name)
    return dataset


def load_task(name: str = "arith", split: str = "train", limit: int | None = None, **options: Any) -> Dataset:
    """A task's split as a validated dataset for ``ProcessGRPOTrainer(train_dataset=...)``; offline for arith.

    Args:
        name: ``"arith"`` (the embedded synthetic task), ``"arith-long"``, ``"arith-distractor"``,
            ``"arith-hard"``, ``"gsm8k"`` (the hub's openai/gsm8k) or a local GSM8K-style JSONL file /
            directory of ``{split}.jsonl`` (``question``, ``answer`` with the gold after ``####``).
        split: ``"train"`` or ``"test"`` (arith also ``"validation"``).
        limit: the first N rows (default: all; arith makes 4,000 train and 200 test rows).
        **options: further :class:`TaskConfig` fields: ``prompt_template``, ``chat``, ``system_prompt``.

    Returns:
        Rows with ``prompt`` and ``answer`` (the gold number as text), and ``solution`` (the gold worked
        solution), ``question`` and ``difficulty``; every gold answer parses as a number.

    Raises:
        ValueError: an unknown arith variant, split or option, naming it.
    """
    unknown = sorted(set(options) - {f.name for f in fields(TaskConfig)})
    if unknown:
        raise ValueError(f"load_task: unknown option(s) {unknown}; TaskConfig's fields are accepted")
    return load_task_split(TaskConfig(dataset=name, **options), split, limit=limit)
