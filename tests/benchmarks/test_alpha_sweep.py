"""benchmarks/alpha_sweep.py: one compare arm per α, and the table and plot beside the paper's figures."""

from __future__ import annotations

import math

import pytest
from PIL import Image

from psgrpo.commands.compare import CompareConfig, compare_arms
from psgrpo.commands.compare_report import write_curves_csv


@pytest.fixture(scope="module")
def sweep(import_benchmark):
    return import_benchmark("alpha_sweep")


def test_arms_are_grpo_then_one_vps_arm_per_alpha(sweep):
    arms = compare_arms(CompareConfig(arms=sweep.sweep_arms([0.0, 1.2])))
    assert arms == [
        ("grpo", ["--method", "grpo"]),
        ("vps-a0", ["--method", "vps", "--vps_alpha", "0"]),
        ("vps-a1.2", ["--method", "vps", "--vps_alpha", "1.2"]),
    ]


def _rows(label, finals):
    return [
        row
        for seed, final in enumerate(finals)
        for row in ({"method": label, "seed": seed, "step": 0, "accuracy": 0.2},
                    {"method": label, "seed": seed, "step": 10, "accuracy": final})
    ]  # fmt: skip


def test_accuracy_by_alpha_takes_each_seeds_final_value(sweep):
    rows = _rows("vps-a1.2", [0.30, 0.34]) + _rows("vps-a0", [0.25]) + _rows("grpo", [0.5, 0.5])
    by_alpha = sweep.accuracy_by_alpha(rows)
    assert list(by_alpha) == [0.0, 1.2]  # sorted by α; grpo is not an α
    assert by_alpha[1.2].mean == pytest.approx(0.32) and by_alpha[1.2].n == 2
    assert by_alpha[0.0].n == 1 and math.isnan(by_alpha[0.0].half_width)


def test_report_writes_table_with_the_papers_figures_and_a_png(sweep, tmp_path):
    rows = (
        _rows("grpo", [0.30, 0.32, 0.31]) + _rows("vps-a0.8", [0.33, 0.35, 0.31]) + _rows("vps-a2", [0.2] * 3)
    )
    write_curves_csv(rows, tmp_path / "curves.csv")
    table = sweep.report(tmp_path)
    lines = table.splitlines()
    assert lines[2].startswith("| 0.8 | 0.330 ± ") and lines[2].endswith("| 3 | 71.7 |")
    assert lines[3] == "| 2 | 0.200 ± 0.000 | 3 | — |"  # the paper has no α = 2
    assert lines[4].startswith("| grpo | 0.310 ± ")
    with Image.open(tmp_path / "alpha_sweep.png") as image:
        image.verify()
    with pytest.raises(ValueError, match="no curves.csv in .*run the sweep there first"):
        sweep.report(tmp_path / "empty")
    write_curves_csv(_rows("grpo", [0.3]), tmp_path / "curves.csv")
    with pytest.raises(ValueError, match="no vps-a<α> rows"):
        sweep.report(tmp_path)


@pytest.mark.slow
def test_sweep_end_to_end_on_a_tiny_budget(sweep, tmp_path):
    """grpo + two α arms × 1 seed × 1 step on the embedded checkpoint, then the table."""
    tiny = ["--seeds", "0", "--max_steps", "1", "--eval_every", "1", "--max_eval_examples", "2",
            "--eval_max_new_tokens", "8", "--per_device_train_batch_size", "8", "--max_completion_length", "8",
            "--report_to", "none", "--disable_tqdm", "true"]  # fmt: skip
    table = sweep.main(["--output_dir", str(tmp_path), "--alphas", "0", "1.2", *tiny])
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == ["0", "1.2", "grpo"]
    assert (tmp_path / "runs" / "vps-a1.2-seed0" / "report.json").exists()
    assert (tmp_path / "alpha_sweep.png").exists() and (tmp_path / "compare.md").exists()
