"""experiments/bench_memory_bank.py at toy scale: both runs finish and the table reports the bank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_memory_bank_tiny(tmp_path):
    command = [
        sys.executable,
        "experiments/bench_memory_bank.py",
        "--max_steps",
        "2",
        "--output_root",
        str(tmp_path),
        "--per_device_train_batch_size",
        "16",
        "--num_generations",
        "4",
        "--max_completion_length",
        "96",
        "--max_eval_examples",
        "4",
        "--eval_batch_size",
        "4",
        "--method",
        "grpo",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| memory bank | acc before |" in result.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) == {"without", "with"}
    assert summary["without"]["bank_size"] == 0 and summary["without"]["groups_rescued"] == 0
    assert summary["with"]["bank_size"] > 0  # the warm-started policy solves some prompts in 2 × 4 groups
    assert summary["with"]["before"] == summary["without"]["before"]
