"""The ``psgrpo`` command line: ``train``, ``eval``, ``warmstart``, ``inspect``.

Every subcommand parses its dataclasses with TRL's ``TrlParser``: ``--config FILE.yaml``
sets defaults, flags override them. ``psgrpo train`` with no ``--config`` uses the embedded
demo recipe (``psgrpo/recipes/demo.yaml``); with no model it uses the embedded checkpoint.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from psgrpo.compare import compare

logger = logging.getLogger("psgrpo")

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
DEFAULT_RECIPE = RECIPES_DIR / "demo.yaml"

SUBCOMMANDS = {
    "train": "train a policy with grpo / ps / vps (default: the embedded demo)",
    "eval": "accuracy, pass@k, error types of a checkpoint; JSON + markdown + per-sample JSONL",
    "warmstart": "reproduce the embedded warm-start checkpoint (SFT of the tiny model)",
    "inspect": "HTML page of the credit each token gets on a few sampled groups (psgrpo/inspect_credit.py)",
    "compare": "train methods × seeds on one budget; held-out curves, plot and table (docs/compare.md)",
}


def _with_default_recipe(argv: list[str]) -> list[str]:
    return argv if "--config" in argv else ["--config", str(DEFAULT_RECIPE), *argv]


def checkpoint_path(model_name_or_path: str | None) -> str:
    """The checkpoint to load: the given path or hub id, or the embedded checkpoint for ``None``."""
    from psgrpo.tiny import CHECKPOINT_DIR

    return str(CHECKPOINT_DIR) if model_name_or_path is None else model_name_or_path


def load_tokenizer(model_name_or_path: str | None):
    """Load a checkpoint's tokenizer (pad token = EOS when it has none); ``None`` means the embedded one.

    Raises:
        ValueError with the path when a local checkpoint has no tokenizer files.
    """
    from transformers import AutoTokenizer

    path = checkpoint_path(model_name_or_path)
    local = Path(path)
    if local.exists() and not any(
        (local / name).exists() for name in ("tokenizer.json", "tokenizer_config.json")
    ):
        raise ValueError(
            f"checkpoint {path} has no tokenizer (no tokenizer.json / tokenizer_config.json): save it with "
            "tokenizer.save_pretrained(path) next to the model"
        )
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model_and_tokenizer(model_name_or_path: str | None, dtype: str | None = None, **kwargs: Any):
    """Load a causal LM and its tokenizer; ``None`` means the embedded checkpoint.

    Raises:
        ValueError with the path when the checkpoint lacks a tokenizer.
    """
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(model_name_or_path)
    path = checkpoint_path(model_name_or_path)
    torch_dtype = getattr(torch, dtype) if dtype not in (None, "auto") else dtype
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, **kwargs)
    return model, tokenizer


def load_policy(model_args: Any, trust_remote_code: bool = False):
    """:func:`load_model_and_tokenizer` with the options of TRL's ``ModelConfig`` (``train``, ``inspect``)."""
    return load_model_and_tokenizer(
        model_args.model_name_or_path,
        dtype=model_args.dtype,
        attn_implementation=model_args.attn_implementation,
        revision=model_args.model_revision,
        trust_remote_code=trust_remote_code,
    )


def _print_table(title: str, rows: dict[str, dict[str, float]]) -> None:
    keys = ["accuracy", "format_rate", "answer_rate", "mean_tokens"]
    print(f"\n{title}")
    print("| " + " | ".join(["", *keys]) + " |")
    print("|" + "---|" * (len(keys) + 1))
    for name, metrics in rows.items():
        print("| " + " | ".join([name, *(f"{metrics[k]:.3f}" for k in keys)]) + " |")


def train(argv: Sequence[str]) -> dict[str, Any]:
    """``psgrpo train``: build config, data, model; evaluate, train, evaluate; return the report."""
    import torch
    from trl import ModelConfig, get_peft_config

    from psgrpo.config import ProcessGRPOConfig, TaskConfig
    from psgrpo.data.tasks import load_task_split
    from psgrpo.distributed import parameters_sharded
    from psgrpo.evaluate import evaluate_model
    from psgrpo.heldout_eval import HeldOutEvalCallback
    from psgrpo.parsing import ConfigParser
    from psgrpo.trainer import ProcessGRPOTrainer

    parser = ConfigParser((TaskConfig, ProcessGRPOConfig, ModelConfig))
    task, args, model_args = parser.parse_args_and_config(_with_default_recipe(list(argv)))
    torch.manual_seed(args.seed)
    if task.eval_before_after and parameters_sharded(args):
        logger.warning(
            "ZeRO-3/FSDP shard the model, so the before/after evaluation is skipped; evaluate the saved "
            "checkpoint with `psgrpo eval --model_name_or_path %s`",
            args.output_dir,
        )
        task.eval_before_after = False
    model, tokenizer = load_policy(model_args, trust_remote_code=args.trust_remote_code)
    train_dataset = load_task_split(task, task.train_split, limit=task.max_train_examples)
    eval_dataset = load_task_split(task, task.eval_split, limit=task.max_eval_examples)
    eval_kwargs = {
        "max_new_tokens": task.eval_max_new_tokens or args.max_completion_length,
        "batch_size": task.eval_batch_size,
    }
    report: dict[str, Any] = {"method": args.method, "dataset": task.dataset, "output_dir": args.output_dir}
    if task.eval_before_after:
        model.to(args.device)  # the training device (this process's GPU), not the CPU it was loaded on
        report["before"] = evaluate_model(model, tokenizer, eval_dataset, **eval_kwargs)
        logger.info("held-out before training: %s", report["before"])
    trainer = ProcessGRPOTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
    )
    if task.heldout_eval_steps:
        trainer.add_callback(
            HeldOutEvalCallback(
                trainer, eval_dataset, task.heldout_eval_steps, task.heldout_eval_on_start, **eval_kwargs
            )
        )
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
    report["train_seconds"] = time.perf_counter() - start
    trainer.save_model(args.output_dir)
    tokenizer.save_pretrained(args.output_dir)
    if task.eval_before_after:
        report["after"] = evaluate_model(trainer.model, tokenizer, eval_dataset, **eval_kwargs)
    if task.eval_before_after and trainer.is_world_process_zero():
        _print_table(
            f"held-out accuracy on {task.dataset}/{task.eval_split} (n={len(eval_dataset)}, greedy), "
            f"method={args.method}, {report['train_seconds']:.0f} s of training",
            {"before": report["before"], "after": report["after"]},
        )
    if trainer.is_world_process_zero():
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
        (Path(args.output_dir) / "report.json").write_text(json.dumps(report, indent=2))
    return report


def evaluate(argv: Sequence[str]) -> dict[str, float]:
    """``psgrpo eval``: accuracy, pass@k, format, steps and error types of one checkpoint (see eval_command)."""
    from psgrpo.eval_command import run_eval

    return run_eval(argv)


def warmstart(argv: Sequence[str]) -> dict[str, float]:
    """``psgrpo warmstart``: SFT the tiny model on arith and save the checkpoint."""
    from psgrpo.parsing import ConfigParser
    from psgrpo.tiny.warmstart import WarmstartConfig
    from psgrpo.tiny.warmstart import warmstart as run_warmstart

    (cfg,) = ConfigParser((WarmstartConfig,)).parse_args_and_config(list(argv))
    result = run_warmstart(cfg)
    print(json.dumps(result, indent=2))
    return result


def inspect_credit(argv: Sequence[str]) -> Any:
    """``psgrpo inspect``: see :mod:`psgrpo.inspect_credit` (imported here so ``--help`` stays light)."""
    from psgrpo.inspect_credit import inspect as run_inspect

    return run_inspect(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``psgrpo`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in SUBCOMMANDS:
        top = argparse.ArgumentParser(
            prog="psgrpo",
            description="Process-supervised GRPO on TRL. `psgrpo SUBCOMMAND --help` lists a subcommand's options.",
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog="subcommands:\n" + "\n".join(f"  {k:10s} {v}" for k, v in SUBCOMMANDS.items()),
        )
        top.add_argument("subcommand", choices=list(SUBCOMMANDS))
        top.parse_args(argv[:1])  # prints usage / error and exits
        return 2
    command, rest = argv[0], argv[1:]
    {
        "train": train,
        "eval": evaluate,
        "warmstart": warmstart,
        "inspect": inspect_credit,
        "compare": compare,
    }[command](rest)
    from psgrpo.distributed import close_process_group

    close_process_group()  # under torchrun: the trainer is unreachable now, so its process group can go
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
