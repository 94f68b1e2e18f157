"""experiments/ps_sweep.py: one compare arm per (mode, λ) and pure, placed in the report by their flags."""

from __future__ import annotations

import pytest
from PIL import Image

from psgrpo.commands.compare import CompareConfig, compare_arms
from psgrpo.compare.report import write_curves_csv


@pytest.fixture(scope="module")
def sweep(import_experiment):
    return import_experiment("ps_sweep")


def test_arms_are_grpo_then_one_ps_arm_per_cell_then_pure(sweep):
    arms = compare_arms(
        CompareConfig(arms=sweep.sweep_arms(["reward_to_go", "min"], [0.5, 2.0], "--step_scorer reference"))
    )
    assert arms == [
        ("grpo", ["--method", "grpo"]),
        ("ps-rtg-l0.5", ["--method", "ps", "--step_scorer", "reference", "--ps_advantage_mode", "reward_to_go", "--ps_lambda", "0.5"]),
        ("ps-rtg-l2", ["--method", "ps", "--step_scorer", "reference", "--ps_advantage_mode", "reward_to_go", "--ps_lambda", "2"]),
        ("ps-min-l0.5", ["--method", "ps", "--step_scorer", "reference", "--ps_advantage_mode", "min", "--ps_lambda", "0.5"]),
        ("ps-min-l2", ["--method", "ps", "--step_scorer", "reference", "--ps_advantage_mode", "min", "--ps_lambda", "2"]),
        ("ps-pure", ["--method", "ps", "--step_scorer", "reference", "--ps_outcome_weight", "0"]),
    ]  # fmt: skip
    assert [
        label for label, _ in compare_arms(CompareConfig(arms=sweep.sweep_arms(["step"], [1.0], pure=False)))
    ] == [
        "grpo",
        "ps-step-l1",
    ]


@pytest.mark.parametrize(
    ("flags", "recipe", "expected"),
    [
        (["--method", "ps", "--step_scorer", "reference"], None, ("step", 1.0, 1.0, "--step_scorer reference")),
        (["--method", "ps", "--step_scorer", "prm"], None, ("min", 1.0, 1.0, "--step_scorer prm")),  # auto → min
        (["--method", "ps", "--ps_lambda", "0.5", "--ps_outcome_weight", "0"], None, ("step", 0.5, 0.0, "")),
        (["--method", "ps"], {"ps_advantage_mode": "reward_to_go", "ps_lambda": 2}, ("reward_to_go", 2.0, 1.0, "")),
    ],
    ids=["auto-verifier", "auto-prm", "flags", "recipe"],
)  # fmt: skip
def test_arm_cell_reads_the_settings_the_arm_trained_with(
    sweep, tmp_path, write_compare_run, flags, recipe, expected
):
    rows = write_compare_run(tmp_path, "grpo", 0, ["--method", "grpo"], 0.3)
    rows += write_compare_run(tmp_path, "arm", 0, flags, 0.3, recipe=recipe)
    grpo, arm = sweep.trained_arms(rows, tmp_path, sweep.SWEPT)
    cell = sweep.arm_cell(arm)
    assert (cell.mode, cell.lam, cell.outcome_weight, cell.others) == expected
    assert sweep.arm_cell(grpo) is None  # not a ps arm


def test_report_places_hand_named_arms_by_their_flags(sweep, tmp_path, write_compare_run):
    arms = {
        "grpo": (["--method", "grpo"], [0.30, 0.32, 0.31]),
        "ps-ref-end": (["--method", "ps", "--step_scorer", "reference"], [0.33, 0.36, 0.33]),  # auto → step, λ 1
        "ps-ref-rtg": (["--method", "ps", "--step_scorer", "reference", "--ps_advantage_mode", "reward_to_go"], [0.25, 0.30, 0.29]),
        "ps-ref-pure": (["--method", "ps", "--step_scorer", "reference", "--ps_outcome_weight", "0"], [0.1, 0.12]),
        "ps-plain": (["--method", "ps", "--ps_lambda", "2"], [0.31, 0.33, 0.32]),
    }  # fmt: skip
    rows = [row for label, (flags, finals) in arms.items() for seed in range(len(finals))
            for row in write_compare_run(tmp_path, label, seed, flags, finals[seed])]  # fmt: skip
    write_curves_csv(rows, tmp_path / "curves.csv")
    lines = sweep.report(tmp_path).splitlines()
    assert lines[0].startswith("grpo: 0.310 ± ") and lines[0].endswith("over 3 seeds.")
    plain = lines.index("## ps (no other flags)")
    assert lines[plain + 4] == "| step | 2 | 1 | ps-plain | 3 | 0.320 ± 0.025 | +0.010 [+0.010, +0.010] |"
    ref = lines.index("## ps --step_scorer reference")
    body = lines[ref + 4 : ref + 7]
    assert [line.split(" | ")[:4] for line in body] == [
        ["| reward_to_go", "1", "1", "ps-ref-rtg"],  # outcome weight 1 first, then pure; modes sorted
        ["| step", "1", "1", "ps-ref-end"],
        ["| step", "1", "0", "ps-ref-pure"],
    ]
    assert body[1].endswith("| +0.030 [+0.005, +0.055] |")  # paired Δ +0.03, +0.04, +0.02 over the 3 seeds
    assert body[2].split(" | ")[4] == "2"  # seeds of its own; paired over the 2 it shares with grpo
    with Image.open(tmp_path / "ps_sweep.png") as image:
        image.verify()
    assert (tmp_path / "ps_sweep.md").read_text().startswith("# PS-GRPO sweep")


@pytest.mark.slow
def test_sweep_end_to_end_on_a_tiny_budget(sweep, tmp_path, tiny_sweep_flags):
    """grpo + one (mode, λ) arm + pure × 1 seed × 1 step on the embedded checkpoint, then the table."""
    tables = sweep.main(
        ["--output_dir", str(tmp_path), "--modes", "min", "--lambdas", "2", *tiny_sweep_flags]
    )
    assert [
        line.split(" | ")[3]
        for line in tables.splitlines()
        if line.startswith("| min") or line.startswith("| step")
    ] == [
        "ps-min-l2",
        "ps-pure",
    ]
    assert (tmp_path / "runs" / "ps-pure-seed0" / "report.json").exists()
    assert (tmp_path / "ps_sweep.png").exists() and (tmp_path / "compare.md").exists()
