"""experiments/bench_ps_drift.py at toy scale: both modes train, the CSV and the drift table come out."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_ps_drift_tiny(tmp_path):
    command = [
        sys.executable, "experiments/bench_ps_drift.py", "--max_steps", "3", "--output_root", str(tmp_path),
        "--per_device_train_batch_size", "8", "--num_generations", "4", "--max_completion_length", "64",
        "--max_eval_examples", "4", "--eval_batch_size", "4",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| steps / completion |" in result.stdout and "| no-op steps |" in result.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) == {"auto", "reward_to_go"} and all(s["steps"] == 3 for s in summary.values())
    with (tmp_path / "drift.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6 and all(0.0 <= float(r["ps/frac_steps_noop"]) <= 1.0 for r in rows)
    assert all(float(r["ps/tokens_per_step"]) > 0 for r in rows)
    # a rerun reuses finished runs and only re-reads them
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and json.loads((tmp_path / "summary.json").read_text()) == summary
