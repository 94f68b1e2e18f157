"""psgrpo.compare.report: held-out records → CSV rows → per-method summary and Markdown (hand-computed values)."""

from __future__ import annotations

import math

import pytest
from compare_rows import compare_rows
from hypothesis import given
from hypothesis import strategies as st

from psgrpo.compare.report import (
    CURVE_COLUMNS,
    CurvePoint,
    curve_rows,
    familywise_table,
    final_values,
    heldout_points,
    markdown_report,
    paired_differences,
    read_curves_csv,
    reference_accuracy,
    seed_curve,
    steps_to_reach,
    summarize,
    uneven_final_steps,
    write_curves_csv,
)


def test_heldout_points_strip_prefix_sort_and_keep_last_of_a_step():
    records = [
        {"step": 5, "loss": 0.1, "reward": 1.0},
        {"step": 5, "heldout/accuracy": 0.5, "heldout/mean_tokens": 70.0, "epoch": 0.1},
        {"step": 0, "heldout/accuracy": 0.25, "heldout/mean_tokens": 72.0},
        {"step": 5, "heldout/accuracy": 0.75, "heldout/mean_tokens": 71.0},
        {"step": 6, "heldout/wall_seconds": 3.0},  # no accuracy: not an evaluation record
    ]
    assert heldout_points(records) == [
        {"step": 0, "accuracy": 0.25, "mean_tokens": 72.0},
        {"step": 5, "accuracy": 0.75, "mean_tokens": 71.0},
    ]
    assert curve_rows("ps", 2, heldout_points(records))[1] == {
        "method": "ps",
        "seed": 2,
        "step": 5,
        "accuracy": 0.75,
        "mean_tokens": 71.0,
    }


def test_heldout_points_carry_the_training_window_since_the_previous_evaluation():
    records = [
        {"step": 0, "heldout/accuracy": 0.2},
        {"step": 5, "completions/mean_length": 100.0, "diag/unnecessary_step_frac": 0.4},
        {"step": 10, "completions/mean_length": 80.0},  # no diagnostics in this record
        {"step": 10, "heldout/accuracy": 0.3},
        {"step": 15, "completions/mean_length": 60.0, "diag/unnecessary_step_frac": 0.1},
        {"step": 20, "completions/mean_length": 50.0, "diag/unnecessary_step_frac": 0.3},
        {"step": 20, "heldout/accuracy": 0.4},
    ]
    assert heldout_points(records) == [
        {"step": 0, "accuracy": 0.2},  # nothing trained before step 0
        {"step": 10, "accuracy": 0.3, "train/mean_tokens": 90.0, "train/unnecessary_step_frac": 0.4},
        {
            "step": 20,
            "accuracy": 0.4,
            "train/mean_tokens": 55.0,
            "train/unnecessary_step_frac": pytest.approx(0.2),
        },
    ]


def test_heldout_points_take_the_process_share_of_whichever_method_logged_it():
    records = [
        {"step": 5, "vps/process_share": 0.1, "diag/process_auc": 0.5, "diag/all_equal_correct_frac": 0.7},
        {"step": 10, "vps/process_share": 0.3, "diag/process_auc": 0.7},
        {"step": 10, "heldout/accuracy": 0.3},
    ]
    assert heldout_points(records) == [
        {
            "step": 10,
            "accuracy": 0.3,
            "train/process_share": pytest.approx(0.2),
            "train/process_auc": pytest.approx(0.6),
            "train/all_equal_correct_frac": 0.7,
        }
    ]
    ps = [
        {**r, "ps/process_share": r.pop("vps/process_share")} if "vps/process_share" in r else r
        for r in records
    ]
    assert heldout_points(ps)[0]["train/process_share"] == pytest.approx(0.2)


def test_seed_curve_mean_and_95_interval_per_step():
    curve = seed_curve(compare_rows(), "vps", "accuracy")
    assert [(p.step, p.n) for p in curve] == [(0, 2), (10, 2), (20, 2)]
    assert [p.mean for p in curve] == pytest.approx([0.4, 0.65, 0.7])
    half = 12.706 * 0.0707106781 / math.sqrt(2)  # t(0.975, 1) · stdev(0.7, 0.6) / √2
    assert (curve[0].low, curve[0].high) == (0.4, 0.4)
    assert (curve[1].low, curve[1].high) == pytest.approx((0.65 - half, 0.65 + half))
    assert [p.x for p in curve] == [0, 10, 20]
    tokens = seed_curve(compare_rows(), "vps", "accuracy", x="completion_tokens")
    assert [p.x for p in tokens] == pytest.approx([50.0, 1050.0, 2050.0])  # mean over seeds of the x column
    one_seed = seed_curve([r for r in compare_rows() if r["seed"] == 0], "vps", "accuracy")
    assert (one_seed[1].low, one_seed[1].high) == (0.7, 0.7)  # one seed: no interval, the value itself
    assert seed_curve(compare_rows(), "nope", "accuracy") == []


def test_paired_differences_match_seeds():
    assert paired_differences(compare_rows(), "vps") == pytest.approx({0: 0.2, 1: -0.1})
    rows = compare_rows() + [{"method": "vps", "seed": 7, "step": 20, "accuracy": 0.9}]  # grpo has no seed 7
    assert set(paired_differences(rows, "vps")) == {0, 1}


def test_steps_to_reach_first_step_at_or_above_target():
    curve = [
        CurvePoint(0, 0.4, 0.4, 0.4, 2),
        CurvePoint(10, 0.65, 0.6, 0.7, 2),
        CurvePoint(20, 0.7, 0.6, 0.8, 2),
    ]
    assert steps_to_reach(curve, 0.65) == 10
    assert steps_to_reach(curve, 0.3) == 0
    assert steps_to_reach(curve, 0.71) is None
    # 0.55 + 0.1 is 0.6500000000000001 in floats; a mean of exactly that target still counts.
    assert steps_to_reach([CurvePoint(5, 0.65, 0.65, 0.65, 1)], 0.55 + 0.1) == 5


def test_final_values_take_each_seeds_last_step():
    # a shorter third seed
    rows = compare_rows() + [{"method": "vps", "seed": 2, "step": 10, "accuracy": 0.1}]
    assert final_values(rows, "vps", "accuracy") == [0.8, 0.6, 0.1]
    assert final_values(rows, "vps", "completion_tokens") == [2000.0, 2100.0]  # seed 2 lacks the column
    assert reference_accuracy(compare_rows()) == pytest.approx(0.65)
    assert reference_accuracy([r for r in compare_rows() if r["method"] != "grpo"]) is None


def test_summarize_hand_computed():
    grpo, vps, ps = summarize(compare_rows())
    assert [s.method for s in (grpo, vps, ps)] == ["grpo", "vps", "ps"]  # order of appearance
    assert (vps.seeds, vps.start_accuracy) == (2, 0.4)
    assert vps.final_accuracy.mean == pytest.approx(0.7)
    assert vps.final_accuracy.half_width == pytest.approx(
        12.706 * 0.1414213562 / math.sqrt(2)
    )  # stdev(.8,.6)
    assert grpo.final_accuracy.mean == pytest.approx(0.65)
    assert grpo.paired_difference is None
    assert vps.paired_difference.mean == pytest.approx(0.05)  # seed 0: +0.2, seed 1: −0.1
    assert vps.paired_difference.half_width == pytest.approx(12.706 * 0.2121320344 / math.sqrt(2))
    assert ps.paired_difference.mean == pytest.approx(-0.05)
    assert (grpo.steps_to_reference, vps.steps_to_reference, ps.steps_to_reference) == (20, 10, None)
    assert (grpo.steps_ratio, vps.steps_ratio, ps.steps_ratio) == (1.0, 0.5, None)
    assert vps.final_mean_tokens == pytest.approx(77.5)  # (78 + 77) / 2
    assert vps.completion_tokens == pytest.approx(2050.0)  # (2000 + 2100) / 2
    assert vps.train_seconds == pytest.approx(20.5)  # (20 + 21) / 2
    one_seed = summarize([r for r in compare_rows() if r["seed"] == 0])
    assert math.isnan(one_seed[0].final_accuracy.half_width)


def test_summarize_without_grpo_has_no_reference():
    rows = [r for r in compare_rows() if r["method"] != "grpo"]
    assert all(s.steps_to_reference is None for s in summarize(rows))
    text = markdown_report(summarize(rows), "psgrpo compare --methods vps ps", reference_accuracy(rows))
    assert (
        "steps to reach" not in text
        and "paired" not in text
        and "| vps | 2 | 0.400 | 0.700 ± 1.271 |" in text
    )


def test_markdown_report_table_and_command():
    rows = compare_rows()
    text = markdown_report(
        summarize(rows), "psgrpo compare --seeds 0 1", reference_accuracy(rows), heldout_problems=1000
    )
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| method"))
    assert "paired Δ vs grpo (95% CI)" in header and "steps to reach grpo final (0.650)" in header
    assert (
        "| vps | 2 | 0.400 | 0.700 ± 1.271 | +0.050 [-1.856, +1.956] | 10 (0.50×) | 77.5 | 2050 | 20 |"
        in lines
    )
    assert (
        "| ps | 2 | 0.400 | 0.600 ± 0.000 | -0.050 [-0.685, +0.585] | not reached | 77.5 | 2050 | 20 |"
        in lines
    )
    assert "| grpo | 2 | 0.400 | 0.650 ± 0.635 | — | 20 | 77.5 | 2050 | 20 |" in lines
    assert "binomial 95% half-width of at most 0.031" in text
    assert "psgrpo compare --seeds 0 1" in lines
    assert all(line.count("|") == header.count("|") for line in lines if line.startswith("| "))


def test_familywise_table_bonferroni_over_the_arms():
    lines = familywise_table(compare_rows())  # vps − grpo per seed: +0.2, −0.1; ps − grpo: 0.0, −0.1; k = 2
    assert lines[0] == "## Several arms against `grpo`: family-wise intervals"
    assert "| method | paired Δ, 95% CI | paired Δ, 97.50% CI (Bonferroni, 2 arms) |" in lines
    # one degree of freedom: t = tan(π(p − ½)); at p = 0.9875, 25.452; s/√n = 0.15 → half-width 3.818
    assert "| vps | +0.050 [-1.856, +1.956] | +0.050 [-3.768, +3.868] |" in lines
    assert any(line.startswith("| ps | -0.050 ") for line in lines)
    one_arm = [row for row in compare_rows() if row["method"] != "ps"]
    assert familywise_table(one_arm) == []  # a single arm needs no correction


def test_csv_round_trip_with_missing_cells(tmp_path):
    rows = compare_rows()
    rows[0] = {k: v for k, v in rows[0].items() if k != "completion_tokens"} | {"pass_at_4": 0.9}
    path = tmp_path / "curves.csv"
    write_curves_csv(rows, path)
    header = path.read_text().splitlines()[0].split(",")
    assert header == [*CURVE_COLUMNS, "pass_at_4"]  # fixed columns first, then extras
    assert read_curves_csv(path) == rows


def test_read_curves_csv_names_the_bad_line(tmp_path):
    path = tmp_path / "curves.csv"
    path.write_text("method,seed,step,accuracy\ngrpo,0,0,0.5\ngrpo,zero,10,0.6\n")
    with pytest.raises(ValueError, match="line 3"):
        read_curves_csv(path)


curves = st.lists(st.floats(0, 1), min_size=1, max_size=8).map(
    lambda means: [CurvePoint(10 * i, m, m, m, 1) for i, m in enumerate(means)]
)


@given(curves, st.floats(0, 1))
def test_steps_to_reach_is_the_first_crossing(curve, target):
    step = steps_to_reach(curve, target)
    crossed = [p.step for p in curve if p.mean >= target - 1e-9]
    assert step == (crossed[0] if crossed else None)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.floats(0, 1)), min_size=1, max_size=20))
def test_seed_curve_bounds_hold(points):
    rows = [{"method": "m", "seed": seed, "step": step, "accuracy": acc} for seed, step, acc in points]
    for p in seed_curve(rows, "m", "accuracy"):
        assert p.low - 1e-12 <= p.mean <= p.high + 1e-12


def test_an_arm_whose_seeds_end_at_different_steps_is_named():
    """A run missing its last evaluation made "final" mix steps without a word (a review found it, 2026-12-07)."""
    rows = [
        {"method": m, "seed": s, "step": step, "accuracy": 0.5}
        for m in ("grpo", "ps")
        for s in (0, 1, 2)
        for step in (0, 30, 60)
        if not (m == "grpo" and s == 2 and step == 60)
    ]
    assert uneven_final_steps([r for r in rows if r["method"] == "ps"]) == []
    (line,) = uneven_final_steps(rows)
    assert line.startswith("grpo: its seeds' last evaluations fall at different steps (step 30: seed 2; "
                           "step 60: seeds 0, 1)")  # fmt: skip


def test_paired_differences_pair_each_seed_at_the_last_step_both_arms_evaluated():
    """ps stopped at step 120 while grpo ran to 240: its step 120 was paired with grpo's step 240 without a
    word (an audit found it, /tmp/audit_stats/pairing.py); at the same step every seed is +0.010."""
    rows = [
        {"method": m, "seed": s, "step": step, "accuracy": base + step / 1000}
        for m, base, steps in (("grpo", 0.20, (0, 120, 240)), ("ps", 0.21, (0, 120)))
        for s in (1, 2, 3)
        for step in steps
    ]
    assert paired_differences(rows, "ps") == pytest.approx({1: 0.01, 2: 0.01, 3: 0.01})
    assert paired_differences(rows, "ps", relative=True) == pytest.approx({s: 0.01 / 0.32 for s in (1, 2, 3)})
    (ps,) = [s for s in summarize(rows) if s.method == "ps"]
    assert ps.paired_difference.mean == pytest.approx(0.01)
    (line,) = uneven_final_steps(rows)  # each arm is even on its own; the arms are not
    assert line.startswith(
        "ps: for some seeds its last evaluation is not grpo's (seed 1: step 120 against 240; "
        "seed 2: step 120 against 240; seed 3: step 120 against 240), so its paired Δ takes"
    )
    even = [r for r in rows if r["step"] <= 120]
    assert uneven_final_steps(even) == [] and paired_differences(even, "ps") == paired_differences(rows, "ps")


def test_read_curves_csv_refuses_a_repeated_point(tmp_path):
    """Two rows for one (arm, seed, step) were resolved silently, differently by different readers."""
    path = tmp_path / "curves.csv"
    path.write_text("method,seed,step,accuracy\nps,1,240,0.32\ngrpo,1,240,0.3\nps,1,240,0.2\n")
    with pytest.raises(ValueError, match=r"curves.csv line 4: arm 'ps' seed 1 step 240 repeats line 2"):
        read_curves_csv(path)
