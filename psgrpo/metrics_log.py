"""``metrics.jsonl``: every log record of a run, one JSON object per line, written as training goes.

``psgrpo compare``, the held-out callback's curves and the benchmarks read this file; unlike
TensorBoard event files it survives a crash line by line and needs no extra package to read.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

logger = logging.getLogger("psgrpo")

METRICS_FILE = "metrics.jsonl"


class JsonlMetricsCallback(TrainerCallback):
    """Append every log record (loss, rewards, KL, eval metrics …) to ``path``; main process only.

    A run resumed from a checkpoint replays the steps after it, so the records logged after that step (by the
    run that stopped) are dropped first (:func:`keep_records_through`): each step has one record, as in
    TensorBoard after a resume.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_train_begin(self, args, state, control, **kwargs) -> None:
        if state.is_world_process_zero and state.global_step > 0 and self.path.exists():
            dropped = keep_records_through(self.path, state.global_step)
            if dropped:
                logger.info(
                    "%s: dropped %d record(s) logged after step %d, the step this run resumes from (they are "
                    "logged again as the steps replay)",
                    self.path,
                    dropped,
                    state.global_step,
                )

    def on_log(self, args, state, control, logs=None, **kwargs) -> None:  # noqa: D401 - HF callback signature
        if not state.is_world_process_zero or not logs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {"step": state.global_step, **{k: _to_json(v) for k, v in logs.items()}}
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def read_metrics(output_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``output_dir/metrics.jsonl`` in order (``[]`` when there is none).

    Raises:
        ValueError: a line that is not one JSON record, naming the file and the line (a run killed while
            writing leaves its last line cut).
    """
    path = Path(output_dir) / METRICS_FILE
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{path}, line {number}: not a JSON record ({err.msg}); a run killed while writing leaves its last "
                "line cut: delete that line, or the run's folder to train it again"
            ) from None
    return records


def keep_records_through(path: Path, step: int) -> int:
    """Rewrite ``path`` (a ``metrics.jsonl``) keeping the records of steps ``<= step``; return how many went.

    A line that is not a JSON record (the last one, cut by a killed run) goes too. The file is replaced in one
    rename, so a crash here leaves the old file whole.
    """
    kept, dropped = [], 0
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            dropped += 1
            continue
        if (
            isinstance(record, dict)
            and isinstance(record.get("step"), (int, float))
            and record["step"] > step
        ):
            dropped += 1
        else:
            kept.append(line)
    if dropped:
        staged = path.with_name(f".{path.name}.resume")
        staged.write_text("".join(line + "\n" for line in kept))
        os.replace(staged, path)
    return dropped


def _to_json(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.item() if value.numel() == 1 else value.tolist()
    return value
