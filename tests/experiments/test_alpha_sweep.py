"""experiments/alpha_sweep.py: one compare arm per α, and the table and plot beside the paper's figures."""

from __future__ import annotations

import pytest
from PIL import Image

from psgrpo.commands.compare import CompareConfig, compare_arms
from psgrpo.compare.report import write_curves_csv


@pytest.fixture(scope="module")
def sweep(import_experiment):
    return import_experiment("alpha_sweep")


def test_arms_are_grpo_then_one_vps_arm_per_alpha(sweep):
    arms = compare_arms(CompareConfig(arms=sweep.sweep_arms([0.0, 1.2])))
    assert arms == [
        ("grpo", ["--method", "grpo"]),
        ("vps-a0", ["--method", "vps", "--vps_alpha", "0"]),
        ("vps-a1.2", ["--method", "vps", "--vps_alpha", "1.2"]),
    ]
    gold = compare_arms(
        CompareConfig(arms=sweep.sweep_arms([0.4], "--vps_probe gold_suffix", prefix="vps-gs"))
    )
    assert gold[1] == ("vps-gs-a0.4", ["--method", "vps", "--vps_probe", "gold_suffix", "--vps_alpha", "0.4"])


def _arm(write, root, label, flags, finals):
    return [row for seed, final in enumerate(finals) for row in write(root, label, seed, flags, final)]


def test_report_has_a_table_per_probe_with_the_papers_figures(sweep, tmp_path, write_compare_run):
    gold = ["--method", "vps", "--vps_probe", "gold_suffix", "--vps_boundaries", "markers"]
    rows = (
        _arm(write_compare_run, tmp_path, "grpo", ["--method", "grpo"], [0.30, 0.32, 0.31])
        + _arm(write_compare_run, tmp_path, "vps-a2", ["--method", "vps", "--vps_alpha", "2"], [0.2] * 3)
        + _arm(write_compare_run, tmp_path, "vps-a0.8", ["--method", "vps", "--vps_alpha", "0.8"], [0.33, 0.35, 0.31])
        + _arm(write_compare_run, tmp_path, "vps-gs", gold, [0.34, 0.33])  # hand-named: α 1.2 by default
        + _arm(write_compare_run, tmp_path, "ps", ["--method", "ps"], [0.5])  # not a vps arm: left out
    )  # fmt: skip
    write_curves_csv(rows, tmp_path / "curves.csv")
    lines = sweep.report(tmp_path).splitlines()
    assert lines[0].startswith("grpo: 0.310 ± ") and lines[0].endswith("over 3 seeds.")
    plain = lines.index("## vps (no other flags)")
    assert lines[plain + 4].startswith("| 0.8 | vps-a0.8 | 3 | 0.330 ± ") and lines[plain + 4].endswith(
        "| 71.7 |"
    )
    assert (
        lines[plain + 5] == "| 2 | vps-a2 | 3 | 0.200 ± 0.000 | -0.110 [-0.135, -0.085] | — |"
    )  # no paper α = 2
    gs = lines.index("## vps --vps_boundaries markers --vps_probe gold_suffix")
    assert lines[gs + 4] == "| 1.2 | vps-gs | 2 | 0.335 ± 0.064 | +0.025 [-0.166, +0.216] | 72.2 |"
    assert not any("| ps |" in line for line in lines)
    with Image.open(tmp_path / "alpha_sweep.png") as image:
        image.verify()


@pytest.mark.slow
def test_sweep_end_to_end_on_a_tiny_budget(sweep, tmp_path, tiny_sweep_flags):
    """grpo + two α arms × 1 seed × 1 step on the embedded checkpoint, then the table."""
    table = sweep.main(["--output_dir", str(tmp_path), "--alphas", "0", "1.2", *tiny_sweep_flags])
    assert [
        line.split(" | ")[1]
        for line in table.splitlines()
        if line.startswith("| 0") or line.startswith("| 1")
    ] == [
        "vps-a0",
        "vps-a1.2",
    ]
    assert (tmp_path / "runs" / "vps-a1.2-seed0" / "report.json").exists()
    assert (tmp_path / "alpha_sweep.png").exists() and (tmp_path / "compare.md").exists()
