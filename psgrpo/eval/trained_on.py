"""What a checkpoint was trained on, and which checkpoint of a run directory ``psgrpo eval`` reads.

``psgrpo train`` writes :data:`TASK_RECORD` (the task options: dataset, splits, prompt format; the method and the
run's ``chat_template_kwargs``) into its
output directory and into every checkpoint it saves (the trainer's ``run_record``, written into the staged
checkpoint before its commit, so a complete checkpoint always holds it). ``psgrpo eval``
reads it (:func:`read_task_record`, from the checkpoint or the run directory around it) and evaluates
on that task unless ``--dataset`` (or a ``--config`` that sets it) says otherwise, saying so in one
line: an ``arith-hard`` checkpoint used to be evaluated on ``arith/test`` without a word.

A run directory that holds no final model, only ``checkpoint-N/`` folders (a run stopped, or the
Python API without ``trainer.save_model()``), is evaluated from its newest complete checkpoint
(:func:`resolve_eval_checkpoint`), or the error names the paths there are.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger("psgrpo")

TASK_RECORD = "psgrpo_task.json"
"""The file, in a run directory and each of its checkpoints, naming the task the model was trained on."""

RECORDED_FIELDS = (
    "dataset",
    "eval_split",
    "prompt_template",
    "chat",
    "system_prompt",
    "max_eval_examples",
    "eval_max_new_tokens",
)
"""The ``TaskConfig`` fields recorded, and applied by ``psgrpo eval`` unless given: the task, and the held-out
evaluation ``psgrpo train`` ran before and after (its rows, and its token limit, which defaults to the run's
``max_completion_length``), so ``psgrpo eval`` on the checkpoint measures what train's table measured.
Records written before the last two were added lack them, and eval keeps its own defaults there."""

MODEL_FILES = ("config.json",)
"""A directory holding these is a model checkpoint (weights beside them)."""


def task_record(task: Any) -> dict[str, Any]:
    """The :data:`RECORDED_FIELDS` a ``TaskConfig`` (or any object) has, as a JSON-ready dict."""
    return {name: getattr(task, name) for name in RECORDED_FIELDS if hasattr(task, name)}


def run_record(
    task: Any, method: str | None = None, chat_template_kwargs: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What :data:`TASK_RECORD` holds for a run: :func:`task_record`, ``method`` (the run's ``--method``) and,
    when set, the run's ``chat_template_kwargs``.

    ``psgrpo eval`` does not apply the method; ``psgrpo train --resume_from_checkpoint`` refuses to continue the
    run with another one. ``psgrpo eval`` applies ``chat_template_kwargs`` unless its own
    ``--chat_template_kwargs`` is given (:func:`recorded_chat_template_kwargs`): a conversational prompt is then
    rendered as training rendered it (``{"enable_thinking": false}`` and the like)."""
    record = task_record(task) | ({"method": method} if method is not None else {})
    return record | ({"chat_template_kwargs": dict(chat_template_kwargs)} if chat_template_kwargs else {})


def write_record(directory: str | Path, record: Mapping[str, Any]) -> Path:
    """Write ``record`` as :data:`TASK_RECORD` into ``directory`` (created if missing); return its path."""
    path = Path(directory) / TASK_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(record), indent=2) + "\n")
    return path


def write_task_record(
    directory: str | Path,
    task: Any,
    method: str | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> Path:
    """Write :data:`TASK_RECORD` for ``task`` (and ``method``, ``chat_template_kwargs``: :func:`run_record`) into
    ``directory``."""
    return write_record(directory, run_record(task, method, chat_template_kwargs))


def read_run_record(directory: str | Path) -> dict[str, Any]:
    """The whole :data:`TASK_RECORD` of ``directory`` (task fields and the method), ``{}`` when it has none or
    it cannot be read."""
    path = Path(directory) / TASK_RECORD
    try:
        record = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def read_task_record(model_path: str | Path | None) -> tuple[dict[str, Any], Path] | None:
    """``(recorded task fields, the file)`` for a local checkpoint: its own record, else its run directory's; for
    ``embedded:NAME``, the task of that name it was warm-started on (``embedded:arith-hard`` → ``arith-hard``);
    ``None`` for a Hub id, the default embedded checkpoint, or a checkpoint trained without ``psgrpo train``."""
    if model_path is None:
        return None
    if str(model_path).startswith("embedded:"):
        from psgrpo.tiny import EMBEDDED_CHECKPOINTS

        name = str(model_path).removeprefix("embedded:")
        return ({"dataset": name}, EMBEDDED_CHECKPOINTS[name]) if name in EMBEDDED_CHECKPOINTS else None
    local = Path(model_path).expanduser()
    for directory in (local, local.parent):
        path = directory / TASK_RECORD
        if path.is_file():
            try:
                record = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                return None
            if isinstance(record, dict) and isinstance(record.get("dataset"), str):
                return {k: v for k, v in record.items() if k in RECORDED_FIELDS}, path
    return None


def recorded_chat_template_kwargs(model_path: str | Path | None) -> tuple[dict[str, Any], Path] | None:
    """``(chat_template_kwargs, the file)`` the run of a local checkpoint trained with (its own
    :data:`TASK_RECORD`, else its run directory's); ``None`` when it has no record or the run set none."""
    if model_path is None or str(model_path).startswith("embedded:"):
        return None
    local = Path(model_path).expanduser()
    for directory in (local, local.parent):
        if (directory / TASK_RECORD).is_file():
            value = read_run_record(directory).get("chat_template_kwargs")
            return (dict(value), directory / TASK_RECORD) if isinstance(value, dict) and value else None
    return None


def apply_task_record(
    task: Any, model_path: str | None, given: Mapping[str, Any] | set[str], model_label: str
) -> str | None:
    """Set ``task``'s fields to those the checkpoint was trained with, except the ``given`` ones (typed or set by a
    ``--config``); return the one line to log, or ``None`` when there is no record or ``--dataset`` was given."""
    found = read_task_record(model_path)
    if found is None or "dataset" in given:
        return None
    record, path = found
    for name, value in record.items():
        if name not in given:
            setattr(task, name, value)
    limits = [
        f"{'all' if task.max_eval_examples is None else task.max_eval_examples} problems"
        if "max_eval_examples" in record and "max_eval_examples" not in given
        else None,
        f"at most {task.eval_max_new_tokens} new tokens"
        if record.get("eval_max_new_tokens") and "eval_max_new_tokens" not in given
        else None,
    ]
    as_trained = ", ".join(limit for limit in limits if limit)
    return (
        f"psgrpo eval: {model_label} was trained on {record['dataset']} ({path}), so it is evaluated on "
        f"{task.dataset}/{task.eval_split}{f' ({as_trained}, as its training run set)' if as_trained else ''}; "
        "--dataset evaluates it on another task"
    )


def resolve_eval_checkpoint(
    model_path: str | None, command: str = "psgrpo eval", verb: str = "evaluated"
) -> str | None:
    """``model_path``, or, for a run directory without a model but with ``checkpoint-N/`` folders, its newest
    complete checkpoint (logged in one line).

    Raises:
        FileNotFoundError: a run directory whose checkpoints are all incomplete (naming them and why).
    """
    from psgrpo.checkpoints.atomic import last_complete_checkpoint

    if model_path is None:
        return None
    local = Path(model_path).expanduser()
    if not local.is_dir() or any((local / name).is_file() for name in MODEL_FILES):
        return model_path
    if not any(local.glob("checkpoint-*")) and not any(local.glob("partial-checkpoint-*")):
        return model_path
    newest, skipped = last_complete_checkpoint(local)
    if newest is None:
        found = "; ".join(f"{p} ({reason})" for p, reason in skipped)
        raise FileNotFoundError(
            f"--model_name_or_path {model_path}: holds no model (no config.json) and no complete checkpoint "
            f"({found}); pass a checkpoint directory that holds config.json and the weights"
        )
    logger.info(
        "%s: %s holds no final model (no config.json), so its newest complete checkpoint %s is %s "
        "(trainer.save_model() writes the final model there)",
        command,
        model_path,
        newest,
        verb,
    )
    return str(newest)
