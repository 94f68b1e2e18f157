"""experiments/_sweeps.py: a sweep's arms as they trained, read back from compare's run specs."""

from __future__ import annotations

import math

import pytest

from psgrpo.compare.intervals import Interval
from psgrpo.compare.report import write_curves_csv


@pytest.fixture(scope="module")
def sweeps(import_experiment):
    return import_experiment("_sweeps")


def test_settings_are_defaults_then_recipe_then_flags(sweeps, tmp_path, write_compare_run):
    rows = write_compare_run(tmp_path, "grpo", 0, ["--method", "grpo"], 0.3)
    rows += write_compare_run(tmp_path, "ps-x", 0, ["--method", "ps", "--ps_lambda", "0.5"], 0.3,
                              recipe={"ps_lambda": 2, "ps_min_temperature": 0.5})  # fmt: skip
    grpo, ps = sweeps.trained_arms(rows, tmp_path, swept=["ps_lambda"])
    assert ps.settings["ps_lambda"] == "0.5"  # the flag beats the recipe (flag values stay strings)
    assert ps.settings["ps_min_temperature"] == 0.5  # the recipe beats the default
    assert ps.settings["vps_alpha"] == 1.2  # untouched default
    assert grpo.settings["method"] == "grpo" and ps.settings["method"] == "ps"
    assert grpo.others == ps.others == ""  # method and swept flags never count; shared flags neither


def test_others_are_the_flags_that_set_an_arm_apart(sweeps, tmp_path, write_compare_run):
    rows = write_compare_run(tmp_path, "grpo", 0, ["--method", "grpo"], 0.3)
    kwargs = '{"correct_weight": 0.0}'
    rows += write_compare_run(tmp_path, "ps-bin", 0, ["--method", "ps", "--step_scorer", "reference",
                                                      "--step_scorer_kwargs", kwargs], 0.3)  # fmt: skip
    _, arm = sweeps.trained_arms(rows, tmp_path, swept=[])
    assert arm.others == f"--step_scorer reference --step_scorer_kwargs '{kwargs}'"  # a command line, quoted


def test_results_pair_each_arm_with_grpo_over_common_seeds(sweeps, tmp_path, write_compare_run):
    rows = [row for seed, final in enumerate([0.30, 0.32, 0.31])
            for row in write_compare_run(tmp_path, "grpo", seed, ["--method", "grpo"], final)]  # fmt: skip
    rows += [row for seed, final in enumerate([0.34, 0.35])
             for row in write_compare_run(tmp_path, "ps", seed, ["--method", "ps"], final)]  # fmt: skip
    grpo, ps = sweeps.arm_results(rows, sweeps.trained_arms(rows, tmp_path, swept=[]))
    assert grpo.difference.mean == 0.0 and ps.accuracy.n == 2
    assert ps.difference.mean == pytest.approx(0.035) and ps.difference.n == 2  # seed 2 has no ps run
    write_curves_csv(rows, tmp_path / "curves.csv")
    _, grpo_final = sweeps.sweep_curves(tmp_path)
    assert grpo_final.mean == pytest.approx(0.31) and grpo_final.n == 3


def test_difference_text(sweeps):
    assert sweeps.difference_text(None) == "— (no common seed with grpo)"
    assert sweeps.difference_text(Interval(0.02, math.nan, 1)) == "+0.020 (1 seed)"
    assert sweeps.difference_text(Interval(0.03, 0.025, 3)) == "+0.030 [+0.005, +0.055]"


def test_errors_say_what_is_missing(sweeps, tmp_path):
    with pytest.raises(ValueError, match="no curves.csv in .*run the sweep there first"):
        sweeps.sweep_curves(tmp_path)
    rows = [{"method": "ps-gone", "seed": 0, "step": 60, "accuracy": 0.3}]
    with pytest.raises(ValueError, match="names the arm 'ps-gone', but its run directories are gone"):
        sweeps.trained_arms(rows, tmp_path, swept=[])


@pytest.mark.parametrize(("script", "method"), [("ps_sweep", "ps"), ("alpha_sweep", "vps")])
def test_a_report_without_its_methods_arm_is_an_error(
    import_experiment, tmp_path, write_compare_run, script, method
):
    write_curves_csv(
        write_compare_run(tmp_path, "grpo", 0, ["--method", "grpo"], 0.3), tmp_path / "curves.csv"
    )
    with pytest.raises(ValueError, match=f"has no {method} arm: is this a {script} output"):
        import_experiment(script).report(tmp_path)
    assert not (tmp_path / f"{script}.md").exists()


def test_a_report_warns_when_an_arm_ends_before_grpo(sweeps, tmp_path, write_compare_run):
    """ps stopped at step 30 while grpo ran to 60: its paired Δ takes step 30, and the report says so."""
    grpo = [row for seed, final in enumerate([0.30, 0.32])
            for row in write_compare_run(tmp_path, "grpo", seed, ["--method", "grpo"], final)]  # fmt: skip
    rows = grpo + [
        {**row, "step": 30, "accuracy": row["accuracy"] - 0.02} for row in grpo if row["step"] == 60
    ]
    rows += [{**row, "step": 30} if row["step"] == 60 else row
             for seed, final in enumerate([0.34, 0.35])
             for row in write_compare_run(tmp_path, "ps", seed, ["--method", "ps"], final)]  # fmt: skip
    write_curves_csv(rows, tmp_path / "curves.csv")
    seen = []

    def place(rows, output_dir):
        results = sweeps.arm_results(rows, sweeps.trained_arms(rows, output_dir, swept=[]))
        seen.extend(results)
        return results

    text = sweeps.write_report(tmp_path, "ps_sweep", "ps", "title", place, lambda results, grpo: "table\n",
                               lambda results, grpo, path: None)  # fmt: skip
    assert seen[1].difference.mean == pytest.approx((0.06 + 0.05) / 2)  # at step 30: 0.34 − 0.28, 0.35 − 0.30
    assert text == (
        "table\n\n**Warning.** ps: for some seeds its last evaluation is not grpo's (seed 0: step 30 against 60; "
        "seed 1: step 30 against 60), so its paired Δ takes each such seed at the last step both evaluated.\n"
    )
    assert (tmp_path / "ps_sweep.md").read_text() == f"# title\n\n{text}"
