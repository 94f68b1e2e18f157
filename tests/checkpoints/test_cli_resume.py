"""`psgrpo train --resume_from_checkpoint true` continues from the newest complete checkpoint."""

from __future__ import annotations

import json

import pytest

from psgrpo.checkpoints.atomic import incomplete_reason
from psgrpo.commands.cli import main

ARGS = [
    "train",
    "--method",
    "grpo",
    "--per_device_train_batch_size",
    "8",
    "--num_generations",
    "4",
    "--max_completion_length",
    "16",
    "--max_train_examples",
    "8",
    "--eval_before_after",
    "false",
    "--report_to",
    "none",
    "--save_steps",
    "1",
    "--logging_steps",
    "1",
    "--disable_tqdm",
    "true",
]


@pytest.mark.slow
def test_resume_true_on_the_command_line(tmp_path):
    out = tmp_path / "run"
    main([*ARGS, "--output_dir", str(out), "--max_steps", "1"])
    assert json.loads((out / "report.json").read_text())["resumed_from"] is None
    (out / "partial-checkpoint-2").mkdir()  # as a run killed while saving step 2 leaves it
    main([*ARGS, "--output_dir", str(out), "--max_steps", "2", "--resume_from_checkpoint", "true"])
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "loss" in r] == [1, 2]  # the second run trained step 2 only
    assert [r["step"] for r in records if "train_runtime" in r] == [1, 2]  # one summary per run
    assert incomplete_reason(out / "checkpoint-2") is None and not (out / "partial-checkpoint-2").exists()
    report = json.loads((out / "report.json").read_text())  # the second run's, saying what it resumed
    assert report["resumed_from"] == {"checkpoint": str(out / "checkpoint-1"), "step": 1}
