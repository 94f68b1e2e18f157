"""``psgrpo train``: config → data → model → held-out accuracy before → train → accuracy after.

With no ``--config`` the embedded demo recipe is used (tiny checkpoint, arith task, CPU); any
option of ``ProcessGRPOConfig`` / ``TaskConfig`` / TRL's ``ModelConfig`` can be set in YAML or as
a flag. The report (method, timings, accuracy before/after) is printed as a table and saved as
``report.json`` in ``output_dir``, with the machine and versions the run had (``environment``, as
``psgrpo env`` reports them).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger("psgrpo")

REPORT_KEYS = ("accuracy", "format_rate", "answer_rate", "mean_tokens")


def train(argv: Sequence[str]) -> dict[str, Any]:
    """``psgrpo train``: build config, data, model; evaluate, train, evaluate; return the report.

    Every check that needs no model runs first (options, ``--output_dir``, the model path, the
    checkpoint to resume, the data); a run that fails before writing anything leaves no output
    directory; Ctrl-C raises :class:`~psgrpo.preflight.TrainingInterrupted` naming the checkpoint to
    resume from.
    """
    from trl import ModelConfig

    from psgrpo.config.parsing import ConfigParser
    from psgrpo.data.tasks import TaskConfig
    from psgrpo.hub import check_push_to_hub
    from psgrpo.loading import checkpoint_path, with_default_recipe
    from psgrpo.methods import config_class
    from psgrpo.preflight import (
        TrainingInterrupted,
        check_no_earlier_run,
        check_output_dir,
        check_resume_target,
        check_run_options,
        interrupted_message,
        other_methods_options,
        output_dir_removed_on_failure,
        output_dir_state,
    )

    parser = ConfigParser((TaskConfig, config_class(), ModelConfig), prog="psgrpo train")
    # its notes are logged with the warnings below, once every check passed: a refusal stays one line
    parser.defer_notes = True
    task, args, model_args = parser.parse_args_and_config(with_default_recipe(argv))
    check_output_dir(args.output_dir)
    # before checkpoint_path: a cached Hub model without a Hub turns offline mode on, which would be blamed here
    check_push_to_hub(args.push_to_hub, args.hub_token)
    checkpoint_path(
        model_args.model_name_or_path, revision=model_args.model_revision
    )  # before anything loads
    check_run_options(task, args, model_args, parser.file_sources())
    args.resume_from_checkpoint = check_resume_target(
        args.resume_from_checkpoint, args.output_dir, args.max_steps, args.method, task.dataset
    )
    check_no_earlier_run(args.output_dir, args.resume_from_checkpoint)
    parser.log_pending_notes()
    unused = other_methods_options(
        args.method, {*parser.file_sources(), *parser.command_line}, parser.command_line
    )
    if unused:
        logger.warning(
            "psgrpo train: %s %s; --method %s does not use %s",
            ", ".join(f"--{option} ({owner})" for option, owner in unused.items()),
            "belongs to another method" if len(unused) == 1 else "belong to other methods",
            args.method,
            "it" if len(unused) == 1 else "them",
        )
    try:
        # only the process that creates the folder may remove it: another rank's failure must not race its writes
        with output_dir_removed_on_failure(
            args.output_dir, output_dir_state(args.output_dir, args.should_save)[1]
        ):
            return _train(task, args, model_args)
    except KeyboardInterrupt:
        raise TrainingInterrupted(interrupted_message(args.output_dir, argv)) from None


def _train(task: Any, args: Any, model_args: Any) -> dict[str, Any]:
    """The run itself, on checked options: data, model, evaluation before, training, evaluation after."""
    import torch
    from trl import get_peft_config

    from psgrpo.commands.env import collect as collect_environment
    from psgrpo.data.overlap import overlap_warning
    from psgrpo.data.tasks import load_task_split
    from psgrpo.distributed import parameters_sharded
    from psgrpo.eval.generation import evaluate_model
    from psgrpo.eval.heldout import HeldOutEvalCallback, chat_template_kwargs
    from psgrpo.eval.trained_on import run_record, write_task_record
    from psgrpo.loading import load_policy
    from psgrpo.trainer import ProcessGRPOTrainer

    torch.manual_seed(args.seed)
    if task.eval_before_after and parameters_sharded(args):
        if args.process_index == 0:  # once, not once per rank
            logger.warning(
                "ZeRO-3/FSDP shard the model, so the before/after evaluation is skipped; evaluate the saved "
                "checkpoint with `psgrpo eval --model_name_or_path %s`",
                args.output_dir,
            )
        task.eval_before_after = False
    train_dataset = load_task_split(task, task.train_split, limit=task.max_train_examples)
    eval_dataset = load_task_split(task, task.eval_split, limit=task.max_eval_examples)
    warning = overlap_warning(train_dataset, eval_dataset, task.dataset, task.eval_split)
    if warning and (task.eval_before_after or task.heldout_eval_steps):
        logger.warning(warning)
    model, tokenizer = load_policy(model_args, trust_remote_code=args.trust_remote_code)
    # resolved here so the task record carries it: psgrpo eval on a checkpoint then decodes as this table did
    task.eval_max_new_tokens = task.eval_max_new_tokens or args.max_completion_length
    eval_kwargs = {
        "max_new_tokens": task.eval_max_new_tokens,
        "batch_size": task.eval_batch_size,
    }
    report: dict[str, Any] = {
        "method": args.method,
        "dataset": task.dataset,
        "output_dir": args.output_dir,
        "resumed_from": resumed_from(args.resume_from_checkpoint),
        "environment": collect_environment(),  # the machine and versions this run had (`psgrpo env`)
    }
    # a conversation's prompt as TRL renders it for training (the held-out callback reads the same)
    template_kwargs = chat_template_kwargs(args)
    if task.eval_before_after:
        model.to(args.device)  # the training device (this process's GPU), not the CPU it was loaded on
        report["before"] = evaluate_model(
            model, tokenizer, eval_dataset, chat_template_kwargs=template_kwargs, **eval_kwargs
        )
        logger.info("held-out before training: %s", report["before"])
    trainer = ProcessGRPOTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
    )
    # each checkpoint names its task, for eval and resume
    trainer.run_record = run_record(task, args.method, template_kwargs)
    if task.heldout_eval_steps:
        trainer.add_callback(
            HeldOutEvalCallback(
                trainer,
                eval_dataset,
                task.heldout_eval_steps,
                task.heldout_eval_on_start,
                cache_dir=task.heldout_cache_dir,
                **eval_kwargs,
            )
        )
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
    report["train_seconds"] = time.perf_counter() - start
    trainer.save_model(args.output_dir)  # the tokenizer too (the trainer's processing_class), on one process
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(
            args.output_dir
        )  # kept for a processing_class TRL replaced; once, not per rank
        write_task_record(args.output_dir, task, args.method, template_kwargs)
    if task.eval_before_after:
        report["after"] = evaluate_model(
            trainer.model, tokenizer, eval_dataset, chat_template_kwargs=template_kwargs, **eval_kwargs
        )
    if task.eval_before_after and trainer.is_world_process_zero():
        print_table(
            f"held-out accuracy on {task.dataset}/{task.eval_split} (n={len(eval_dataset)}, greedy), "
            f"method={args.method}, {report['train_seconds']:.0f} s of training"
            + (f" (resumed at step {report['resumed_from']['step']})" if report["resumed_from"] else ""),
            {"before": report["before"], "after": report["after"]},
        )
    if trainer.is_world_process_zero():
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
        (Path(args.output_dir) / "report.json").write_text(json.dumps(report, indent=2))
        print(  # where everything went, and the next command
            f"\npsgrpo train: the model, metrics.jsonl and report.json are in {args.output_dir}; "
            f"`psgrpo eval --model_name_or_path {args.output_dir}` evaluates it"
        )
    return report


def resumed_from(checkpoint: str | None) -> dict[str, Any] | None:
    """``{"checkpoint", "step"}`` of the checkpoint this run resumed (``None`` for a fresh run), for report.json:
    its ``train_seconds`` then count from that step, and "before" is still the starting weights'."""
    from psgrpo.preflight import checkpoint_step

    return None if not checkpoint else {"checkpoint": str(checkpoint), "step": checkpoint_step(checkpoint)}


def print_table(title: str, rows: dict[str, dict[str, float]]) -> None:
    """A markdown table of :data:`REPORT_KEYS` per row (before/after)."""
    print(f"\n{title}")
    print("| " + " | ".join(["", *REPORT_KEYS]) + " |")
    print("|" + "---|" * (len(REPORT_KEYS) + 1))
    for name, metrics in rows.items():
        print("| " + " | ".join([name, *(f"{metrics[k]:.3f}" for k in REPORT_KEYS)]) + " |")
