"""Fixtures for the tests of experiments/ scripts (the drivers of learning experiments)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


@pytest.fixture(scope="module")
def import_experiment():
    """``importlib.import_module`` with experiments/ on ``sys.path``, as the scripts import each other."""
    sys.path.insert(0, str(EXPERIMENTS))
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(str(EXPERIMENTS))


COMMON_FLAGS = ["--max_steps", "60", "--max_eval_examples", "1000"]
"""Flags every arm of a test sweep shares (compare's own run flags, left out of an arm's ``others``)."""


@pytest.fixture
def write_compare_run():
    """``write(root, label, seed, flags, final, recipe=None)``: a finished-looking compare run of a
    sweep (``runs/<label>-seed<seed>/compare_run.json`` with ``COMMON_FLAGS + flags``), returning
    its curve rows (accuracy 0.2 at step 0, ``final`` at step 60)."""
    from psgrpo.compare.settings import RUN_SPEC, flag_values

    def write(root, label, seed, flags, final, recipe=None):
        run = root / "runs" / f"{label}-seed{seed}"
        run.mkdir(parents=True)
        flags = flag_values([*COMMON_FLAGS, *flags, "--seed", str(seed), "--output_dir", str(run)])
        spec = {"recipe": recipe or {"dataset": "arith-hard"}, "flags": flags}
        (run / RUN_SPEC).write_text(json.dumps(spec))
        return [{"method": label, "seed": seed, "step": 0, "accuracy": 0.2},
                {"method": label, "seed": seed, "step": 60, "accuracy": final}]  # fmt: skip

    return write


@pytest.fixture
def tiny_sweep_flags():
    """compare flags of a sweep on the embedded checkpoint that trains one step per run, 1 seed."""
    return ["--seeds", "0", "--max_steps", "1", "--eval_every", "1", "--max_eval_examples", "2",
            "--eval_max_new_tokens", "8", "--per_device_train_batch_size", "8", "--max_completion_length", "8",
            "--report_to", "none", "--disable_tqdm", "true"]  # fmt: skip
