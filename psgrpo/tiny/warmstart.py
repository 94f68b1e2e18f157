"""Warm start of the embedded default: a short SFT of the tiny Qwen2 on arith gold solutions.

RL needs a policy that is sometimes right: a random model never is, so GRPO would see
groups with zero reward variance and learn nothing. A fully trained one leaves RL nothing
to do. ``psgrpo warmstart`` trains the tiny model with TRL's ``SFTTrainer`` (completion-only
loss) and stops as soon as its greedy accuracy on the arith *validation* split reaches
``target_accuracy`` (checked every ``eval_every`` steps), then writes the checkpoint that
``psgrpo train`` starts from. Stopping on accuracy rather than on a step count matters here:
accuracy jumps from ~5 % to ~95 % within a few hundred steps once the model learns to read
the question, and where that jump happens varies with the seed. Its defaults reproduce the
committed checkpoint in ``outputs/warmstart``; ``make warmstart`` writes it over the package's own.

Two options shape the SFT data beyond the default (docs/learning.md has the measurements):

* ``--dataset arith-hard`` (any :data:`~psgrpo.data.arith.ARITH_VARIANTS` name) trains on a
  harder arith variant; validation and the final report use the same variant.
* ``--early_answer_prob p`` turns a share ``p`` of the rows into early-answer rows (reasoning
  truncated at a step end, then the answer; :mod:`psgrpo.data.arith_probe`), which puts the
  GRPO-VPS probe in distribution; ``--early_answer_wrong_prob q`` makes a share ``q`` of those
  prefixes contain one wrong step, answered with where that wrong chain leads.
"""

from __future__ import annotations

import logging
import random
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from datasets import Dataset
from transformers import TrainerCallback
from trl import SFTConfig, SFTTrainer

from psgrpo.config.options import ArithVariant, check_choice, check_number
from psgrpo.data.arith import make_arith_dataset, split_problems
from psgrpo.data.arith_probe import probe_sft_rows
from psgrpo.data.prompts import format_prompt
from psgrpo.eval.generation import evaluate_model
from psgrpo.tiny.model import build_tiny_model
from psgrpo.tiny.tokenizer import build_char_tokenizer

logger = logging.getLogger(__name__)


@dataclass
class WarmstartConfig:
    """Settings of ``psgrpo warmstart``; defaults reproduce the committed checkpoint (in ``outputs/warmstart``)."""

    output_dir: str = field(
        default="outputs/warmstart",
        metadata={
            "help": "Where to write the model and tokenizer (default outputs/warmstart). `make warmstart` writes "
            "the package's embedded checkpoint (--output_dir psgrpo/tiny/checkpoint), which every command "
            "that names embedded:arith then loads."
        },
    )
    target_accuracy: float = field(
        default=0.35,
        metadata={
            "help": "Stop once greedy accuracy on the validation split reaches this (default 0.35): room for RL "
            "to improve. Set above 1 to always train max_steps."
        },
    )
    eval_every: int = field(
        default=10, metadata={"help": "Check validation accuracy every N optimizer steps (default 10)."}
    )
    validation_examples: int = field(
        default=100, metadata={"help": "Validation problems per check (default 100)."}
    )
    max_steps: int = field(
        default=1500,
        metadata={
            "help": "Cap on SFT optimizer steps; also the length of the cosine schedule (default 1500)."
        },
    )
    num_train_examples: int | None = field(
        default=None,
        metadata={
            "help": "Arith training problems to draw. Default: max_steps × batch size (one pass, no repeats)."
        },
    )
    per_device_train_batch_size: int = field(default=32, metadata={"help": "SFT batch size (default 32)."})
    learning_rate: float = field(
        default=2e-3, metadata={"help": "Peak learning rate, 5%% warm-up then cosine decay (default 2e-3)."}
    )
    seed: int = field(default=0, metadata={"help": "Seed for model init and data order (default 0)."})
    hidden_size: int = field(default=128, metadata={"help": "Model width (default 128)."})
    num_layers: int = field(default=4, metadata={"help": "Transformer layers (default 4)."})
    eval_examples: int = field(
        default=200,
        metadata={"help": "Held-out arith test problems used to report accuracy at the end (default 200)."},
    )
    dataset: ArithVariant = field(
        default="arith",
        metadata={
            "help": "Arith variant to train, validate and report on: 'arith' (default), 'arith-long', "
            "'arith-distractor' or 'arith-hard' (psgrpo.data.arith.ARITH_VARIANTS)."
        },
    )
    early_answer_prob: float = field(
        default=0.0,
        metadata={
            "help": "Share of SFT rows that answer early: reasoning cut after a random step, then "
            "'</reasoning>\\n<answer>' (not trained) and the answer (trained). Puts the GRPO-VPS probe in "
            "distribution (default 0: full solutions only)."
        },
    )
    early_answer_wrong_prob: float = field(
        default=0.0,
        metadata={
            "help": "Share of early-answer rows whose reasoning prefix has one wrong step, answered with the value "
            "that wrong chain ends at (default 0)."
        },
    )
    init_from: str | None = field(
        default=None,
        metadata={
            "help": "Continue from this checkpoint (a path, or embedded:NAME such as embedded:arith) instead of a "
            "random init; --hidden_size/--num_layers are then ignored. Default: random init."
        },
    )
    max_new_tokens: int = field(
        default=128,
        metadata={
            "help": "Generation budget of the validation and held-out checks (default 128; 256 for arith-hard)."
        },
    )

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, ArithVariant)
        check_number("target_accuracy", self.target_accuracy, low=0.0, high=1.0)
        check_number("learning_rate", self.learning_rate, low=0.0, low_open=True)
        for name in ("eval_every", "validation_examples", "max_steps", "per_device_train_batch_size"):
            check_number(name, getattr(self, name), low=1)
        check_number("num_train_examples", self.num_train_examples, low=1, allow_none=True)
        check_number("eval_examples", self.eval_examples, low=1)
        check_number("hidden_size", self.hidden_size, low=1)
        check_number("num_layers", self.num_layers, low=1)
        check_number("early_answer_prob", self.early_answer_prob, low=0.0, high=1.0)
        check_number("early_answer_wrong_prob", self.early_answer_wrong_prob, low=0.0, high=1.0)
        check_number("max_new_tokens", self.max_new_tokens, low=1)


class StopAtAccuracy(TrainerCallback):
    """Every ``every`` steps, measure greedy accuracy on ``dataset``; stop training at ``target``."""

    def __init__(
        self, model, tokenizer, dataset, target: float, every: int, max_new_tokens: int = 128
    ) -> None:
        self.model, self.tokenizer, self.dataset = model, tokenizer, dataset
        self.target, self.every, self.max_new_tokens = target, every, max_new_tokens
        self.history: list[tuple[int, float]] = []

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step % self.every:
            return control
        metrics = evaluate_model(
            self.model,
            self.tokenizer,
            self.dataset,
            max_new_tokens=self.max_new_tokens,
            batch_size=100,
            show_progress=False,
        )
        self.history.append((state.global_step, metrics["accuracy"]))
        logger.info("step %d: validation accuracy %.3f", state.global_step, metrics["accuracy"])
        if metrics["accuracy"] >= self.target:
            control.should_training_stop = True
        return control


def warmstart(cfg: WarmstartConfig) -> dict[str, float]:
    """Train the tiny model on arith gold solutions and save it; return timing and held-out accuracy.

    The checkpoint is written to a temporary folder first and moved into place only when
    complete, so an interrupted run never leaves a half-written checkpoint behind.
    """
    check_replaceable(cfg.output_dir)  # before training: it would be wiped at the end
    start = time.perf_counter()
    if cfg.init_from is None:
        tokenizer = build_char_tokenizer()
        model = build_tiny_model(
            tokenizer, seed=cfg.seed, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers
        )
    else:
        from psgrpo.loading import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(cfg.init_from)
    n_train = (
        cfg.num_train_examples
        if cfg.num_train_examples is not None
        else cfg.max_steps * cfg.per_device_train_batch_size
    )
    train = sft_dataset(cfg, n_train)
    stopper = StopAtAccuracy(
        model,
        tokenizer,
        make_arith_dataset("validation", n=cfg.validation_examples, variant=cfg.dataset),
        target=cfg.target_accuracy,
        every=cfg.eval_every,
        max_new_tokens=cfg.max_new_tokens,
    )
    with tempfile.TemporaryDirectory() as run_dir:
        args = SFTConfig(
            output_dir=run_dir,
            max_steps=cfg.max_steps,
            per_device_train_batch_size=cfg.per_device_train_batch_size,
            learning_rate=cfg.learning_rate,
            lr_scheduler_type="cosine",
            warmup_steps=max(1, cfg.max_steps // 20),
            weight_decay=0.01,
            logging_steps=max(1, cfg.eval_every),
            save_strategy="no",
            report_to=[],
            seed=cfg.seed,
            use_cpu=not torch.cuda.is_available(),
            max_length=512,
            completion_only_loss=True,
            dataloader_num_workers=0,
            disable_tqdm=False,
        )
        trainer = SFTTrainer(
            model=model, args=args, train_dataset=train, processing_class=tokenizer, callbacks=[stopper]
        )
        trainer.train()
    train_seconds = time.perf_counter() - start

    test = make_arith_dataset("test", n=cfg.eval_examples, variant=cfg.dataset)
    metrics = evaluate_model(model, tokenizer, test, max_new_tokens=cfg.max_new_tokens, batch_size=100)
    save_checkpoint(model, tokenizer, Path(cfg.output_dir))
    result = {
        "train_seconds": train_seconds,
        "sft_steps": float(trainer.state.global_step),
        "validation_accuracy": stopper.history[-1][1] if stopper.history else float("nan"),
        **{f"heldout_{k}": v for k, v in metrics.items()},
    }
    logger.info("warm start done: %s", result)
    return result


def sft_dataset(cfg: WarmstartConfig, n: int) -> Dataset:
    """The SFT rows (``prompt``, ``completion``): ``n`` training problems of ``cfg.dataset``, a share
    ``cfg.early_answer_prob`` of them as early-answer rows (drawn with ``cfg.seed``)."""
    if not cfg.early_answer_prob:  # exactly the rows of make_arith_dataset (the committed checkpoint's data)
        return make_arith_dataset("train", n=n, variant=cfg.dataset).select_columns(["prompt", "completion"])
    problems = split_problems("train", n=n, variant=cfg.dataset)
    prompts = [format_prompt(p.question, "compact") for p in problems]
    rows = probe_sft_rows(
        prompts, problems, random.Random(cfg.seed), cfg.early_answer_prob, cfg.early_answer_wrong_prob
    )
    return Dataset.from_list(rows)


def checkpoint_names() -> frozenset[str]:
    """The file names :func:`save_checkpoint` can write (``save_pretrained`` of a model and its tokenizer, from
    transformers' own constants): config, generation config, safetensors weights (one file, or an index and
    :data:`SHARD_RE` shards), the tokenizer's config, ``tokenizer.json`` / ``tokenizer.model``, special and added
    tokens and the chat template. It writes no hidden file."""
    from transformers import tokenization_utils_base as tok
    from transformers import utils
    from transformers.tokenization_utils_tokenizers import VOCAB_FILES_NAMES

    return frozenset(
        {
            utils.CONFIG_NAME,
            utils.GENERATION_CONFIG_NAME,
            utils.SAFE_WEIGHTS_NAME,
            utils.SAFE_WEIGHTS_INDEX_NAME,
            tok.TOKENIZER_CONFIG_FILE,
            tok.FULL_TOKENIZER_FILE,
            tok.SPECIAL_TOKENS_MAP_FILE,
            tok.ADDED_TOKENS_FILE,
            tok.CHAT_TEMPLATE_FILE,
            *VOCAB_FILES_NAMES.values(),
        }
    )


SHARD_RE = re.compile(r"model-\d+-of-\d+\.safetensors")
"""The weight shards ``save_pretrained`` writes for a model past its shard size."""


def not_written_by_save(path: Path) -> list[str]:
    """The entries of the folder ``path`` that :func:`save_checkpoint` does not write (folders end in ``/``;
    hidden ones count), sorted: what replacing ``path`` would delete of someone else's. Only its folder of extra
    chat templates (``additional_chat_templates/``, ``.jinja`` files) is its own."""
    from transformers.tokenization_utils_base import CHAT_TEMPLATE_DIR

    names = checkpoint_names()
    found = []
    for entry in sorted(path.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            own = entry.name == CHAT_TEMPLATE_DIR and all(
                p.is_file() and not p.is_symlink() and p.suffix == ".jinja" for p in entry.iterdir()
            )
            if not own:
                found.append(f"{entry.name}/")
        elif not (entry.is_file() and not entry.is_symlink()) or not (
            entry.name in names or SHARD_RE.fullmatch(entry.name)
        ):
            found.append(entry.name)
    return found


def check_replaceable(output_dir: str | Path) -> None:
    """Refuse an ``output_dir`` that :func:`save_checkpoint` would wipe but that holds more than a warm-start
    checkpoint: any file or folder it does not write itself (:func:`not_written_by_save`: a training run, a
    repository, a user's notes), or no ``config.json``. It replaces the folder whole.

    Raises:
        FileExistsError: naming the folder, what of it would be lost, and the way on.
    """
    path = Path(output_dir).expanduser()
    if not path.is_dir() or not any(path.iterdir()):
        return
    found = not_written_by_save(path)
    shown = found[:5] + ([f"{len(found) - 5} more"] if len(found) > 5 else [])
    if not (path / "config.json").is_file():
        shown.append("no config.json")
    if shown:
        raise FileExistsError(
            f"--output_dir {output_dir}: holds more than a warm-start checkpoint ({', '.join(shown)}); "
            "warmstart replaces its output folder whole, deleting them: give a new or empty --output_dir"
        )


def save_checkpoint(model, tokenizer, output_dir: Path) -> None:
    """Save model + tokenizer atomically: write beside ``output_dir``, then swap it in.

    An earlier ``output_dir`` is moved aside into a folder made for it in this call (``.NAME.old.XXXX``) and
    removed with it; nothing else beside ``output_dir`` is touched (a fixed ``NAME.old`` deleted a user's folder
    of that name). If the swap fails, the earlier folder is moved back."""
    output_dir = output_dir.resolve()
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", dir=output_dir.parent))
    try:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        staging.chmod(0o755)  # mkdtemp makes it private; a checkpoint is meant to be shared
        for path in staging.iterdir():
            path.chmod(0o644)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # made in this call: a failed save leaves nothing
        raise
    if output_dir.exists():
        aside = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.old.", dir=output_dir.parent))
        previous = aside / output_dir.name
        output_dir.rename(previous)
        try:
            staging.rename(output_dir)
        except BaseException:
            previous.rename(output_dir)
            shutil.rmtree(staging, ignore_errors=True)
            aside.rmdir()
            raise
        shutil.rmtree(aside)
    else:
        staging.rename(output_dir)
