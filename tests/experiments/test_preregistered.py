"""experiments/preregistered.py: paired pre-registered tests that refuse to run on incomplete seeds."""

from __future__ import annotations

import pytest

from psgrpo.compare.intervals import mean_interval
from psgrpo.compare.report import write_curves_csv


@pytest.fixture(scope="module")
def prereg(import_experiment):
    return import_experiment("preregistered")


def _rows(method: str, by_seed: dict[int, tuple[float, float, float]]) -> list[dict]:
    """Curve rows of ``method``: seed → accuracy at steps 0, 30, 60."""
    return [
        {"method": method, "seed": seed, "step": step, "accuracy": acc}
        for seed, accs in by_seed.items()
        for step, acc in zip((0, 30, 60), accs, strict=True)
    ]


CONTROL = {10: (0.2, 0.22, 0.25), 11: (0.2, 0.21, 0.24), 12: (0.2, 0.23, 0.26)}
TREATMENT = {10: (0.2, 0.27, 0.30), 11: (0.2, 0.25, 0.28), 12: (0.2, 0.27, 0.31)}


def test_both_tests_by_hand(prereg, tmp_path, capsys):
    path = tmp_path / "curves.csv"
    write_curves_csv(_rows("grpo", CONTROL) + _rows("ps-ref-bin", TREATMENT), path)
    argv = [str(path), "--treatment", "ps-ref-bin", "--seeds", "10", "11", "12", "--final_step", "60",
            "--early_step", "30", "--level", "0.975"]  # fmt: skip
    assert prereg.main(argv) == 0
    out = capsys.readouterr().out
    final = [0.30 - 0.25, 0.28 - 0.24, 0.31 - 0.26]
    early = [0.27 - 0.25, 0.25 - 0.24, 0.27 - 0.26]  # treatment at 30 against control at 60
    for name, diffs in (("final", final), ("early", early)):
        expected = mean_interval(diffs, level=0.975)
        line = next(row for row in out.splitlines() if row.startswith(f"| {name} |"))
        assert f"{expected.mean:+.3f} [{expected.low:+.3f}, {expected.high:+.3f}]" in line
    assert "| final | 60 | 60 | 3 |" in out and "| early | 30 | 60 | 3 |" in out
    assert "+5.0, +4.0, +5.0" in out  # per-seed differences in points, in seed order
    results = prereg.run_tests(
        prereg.read_curves_csv(path), "ps-ref-bin", "grpo", [10, 11, 12],
        [prereg.PairedTest("final", 60, 60), prereg.PairedTest("early", 30, 60)], level=0.975,
    )  # fmt: skip
    assert results[0].confirmed  # 5, 4, 5 points: the 97.5 % interval is above 0
    # 2, 1, 1 points with 2 degrees of freedom: t is 6.2, the interval spans 0
    assert not results[1].confirmed


def test_a_missing_seed_prints_no_figure(prereg, tmp_path, capsys):
    path = tmp_path / "curves.csv"
    partial = {seed: accs for seed, accs in TREATMENT.items() if seed != 12}
    write_curves_csv(_rows("grpo", CONTROL) + _rows("ps-ref-bin", partial), path)
    argv = [str(path), "--treatment", "ps-ref-bin", "--seeds", "10", "11", "12", "--final_step", "60",
            "--early_step", "30"]  # fmt: skip
    assert prereg.main(argv) == prereg.EXIT_INCOMPLETE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "ps-ref-bin seed 12 step 30" in captured.err and "ps-ref-bin seed 12 step 60" in captured.err
    assert "0." not in captured.err  # no accuracy leaks into the message


def test_bad_input_is_a_usage_error(prereg, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        prereg.main(
            [str(tmp_path / "none.csv"), "--treatment", "x", "--seeds", "1", "2", "--final_step", "60"]
        )
    assert exit_info.value.code == 2 and "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        prereg.main(
            [str(tmp_path / "none.csv"), "--treatment", "x", "--seeds", "1", "1", "--final_step", "60"]
        )
    assert "names a seed twice" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("method,seed,step,accuracy\ngrpo,ten,60,0.2\n")
    with pytest.raises(SystemExit):
        prereg.main([str(bad), "--treatment", "x", "--seeds", "1", "--final_step", "60"])
    assert "line 2" in capsys.readouterr().err
    with pytest.raises(
        SystemExit
    ) as exit_info:  # a percentage for a probability: a usage error, not "incomplete"
        prereg.main([str(bad), "--treatment", "x", "--seeds", "1", "--final_step", "60", "--level", "97.5"])
    assert (
        exit_info.value.code == 2
        and "--level is a probability strictly between 0 and 1" in capsys.readouterr().err
    )


def test_an_equivalence_margin_says_whether_the_arms_end_level(prereg, tmp_path, capsys):
    """--equivalence_margin adds one verdict column: the interval inside [-M, +M]; without it the table is unchanged."""
    near = {10: (0.2, 0.22, 0.255), 11: (0.2, 0.21, 0.235), 12: (0.2, 0.23, 0.262)}  # +0.5, -0.5, +0.2 points
    path = tmp_path / "curves.csv"
    write_curves_csv(_rows("grpo", CONTROL) + _rows("ps-ref-bin", near) + _rows("far", TREATMENT), path)
    base = [str(path), "--seeds", "10", "11", "12", "--final_step", "60"]
    expected = mean_interval([0.005, -0.005, 0.002], level=0.95)
    assert -0.02 < expected.low and expected.high < 0.02  # so the verdict below is "level"
    assert prereg.main([*base, "--treatment", "ps-ref-bin", "--equivalence_margin", "0.02"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].endswith("| confirmed | level (within ±0.020) |") and table[1].count("|") == 9
    assert table[2].startswith("| final |") and table[2].endswith("| no | **yes** |")
    assert prereg.main([*base, "--treatment", "far", "--equivalence_margin", "0.02"]) == 0
    assert (
        capsys.readouterr().out.splitlines()[2].endswith("| **yes** | no |")
    )  # +4.7 points: above, not level
    assert prereg.main([*base, "--treatment", "ps-ref-bin"]) == 0
    assert "level" not in capsys.readouterr().out
    for bad in ("0", "inf", "nan"):
        with pytest.raises(SystemExit):
            prereg.main([*base, "--treatment", "ps-ref-bin", "--equivalence_margin", bad])
        assert "--equivalence_margin must be a finite number > 0" in capsys.readouterr().err


def _final_only(method: str, by_seed: dict[int, float]) -> list[dict]:
    return [{"method": method, "seed": seed, "step": 60, "accuracy": acc} for seed, acc in by_seed.items()]


def test_the_verdict_column_gives_the_four_preregistered_verdicts(prereg, tmp_path, capsys):
    """Every PREREGISTRATION.md fixes better / level / worse / not shown either way; --verdict prints them."""
    control = {10: 0.30, 11: 0.30, 12: 0.30}
    arms = {  # per-seed differences in points → the verdict with a ±2 point margin, and without one
        "better": ({10: 0.35, 11: 0.34, 12: 0.36}, "better", "better"),
        "better-level": ({10: 0.31, 11: 0.311, 12: 0.312}, "better, level", "better"),
        "worse": ({10: 0.25, 11: 0.26, 12: 0.24}, "worse", "worse"),
        "worse-level": ({10: 0.29, 11: 0.289, 12: 0.288}, "worse, level", "worse"),
        "level": ({10: 0.305, 11: 0.295, 12: 0.302}, "level", "not shown either way"),
        "wide": ({10: 0.40, 11: 0.20, 12: 0.33}, "not shown either way", "not shown either way"),
    }
    path = tmp_path / "curves.csv"
    write_curves_csv(
        _final_only("grpo", control)
        + [r for arm, (accs, *_) in arms.items() for r in _final_only(arm, accs)],
        path,
    )
    base = [str(path), "--seeds", "10", "11", "12", "--final_step", "60", "--verdict"]
    for arm, (_, with_margin, without) in arms.items():
        assert prereg.main([*base, "--treatment", arm, "--equivalence_margin", "0.02"]) == 0
        header, _, row = capsys.readouterr().out.splitlines()
        assert header.endswith("| confirmed | level (within ±0.020) | verdict |")
        assert row.endswith(f"| {with_margin} |"), arm
        assert prereg.main([*base, "--treatment", arm]) == 0
        header, _, row = capsys.readouterr().out.splitlines()
        assert header.endswith("| confirmed | verdict |") and row.endswith(f"| {without} |"), arm
    assert prereg.main([*base[:-1], "--treatment", "better"]) == 0  # without --verdict: the kept table's form
    assert "verdict" not in capsys.readouterr().out


@pytest.mark.parametrize(("treatment", "control"), [(0.352, 0.332), (0.029, 0.009), (0.009, 0.029)])
def test_an_interval_exactly_at_the_margin_is_level(prereg, tmp_path, capsys, treatment, control):
    """0.029 − 0.009 is 0.020000000000000004 in floats: at the margin, it counts as level (1e-9 slack)."""
    path = tmp_path / "curves.csv"
    seeds = {10: None, 11: None, 12: None}
    write_curves_csv(
        _final_only("grpo", dict.fromkeys(seeds, control))
        + _final_only("ps", dict.fromkeys(seeds, treatment)),
        path,
    )
    argv = [str(path), "--treatment", "ps", "--seeds", "10", "11", "12", "--final_step", "60",
            "--equivalence_margin", "0.02"]  # fmt: skip
    assert prereg.main(argv) == 0
    confirmed = "**yes**" if treatment > control else "no"
    assert capsys.readouterr().out.splitlines()[2].endswith(f"| {confirmed} | **yes** |")
    assert prereg.main([*argv, "--verdict"]) == 0
    verdict = "better, level" if treatment > control else "worse, level"
    assert capsys.readouterr().out.splitlines()[2].endswith(f"| {confirmed} | **yes** | {verdict} |")


def test_one_seed_and_repeated_rows_are_usage_errors(prereg, tmp_path, capsys):
    """One seed printed NaN intervals with exit 0; a repeated (arm, seed, step) row was resolved silently."""
    path = tmp_path / "curves.csv"
    write_curves_csv(_rows("grpo", CONTROL) + _rows("ps-ref-bin", TREATMENT), path)
    with pytest.raises(SystemExit) as exit_info:
        prereg.main([str(path), "--treatment", "ps-ref-bin", "--seeds", "10", "--final_step", "60"])
    assert exit_info.value.code == 2 and "a paired t interval needs at least 2" in capsys.readouterr().err
    repeated = tmp_path / "repeated.csv"
    repeated.write_text(path.read_text() + "ps-ref-bin,11,60,0.2\n")
    with pytest.raises(SystemExit) as exit_info:
        prereg.main(
            [str(repeated), "--treatment", "ps-ref-bin", "--seeds", "10", "11", "12", "--final_step", "60"]
        )
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "arm 'ps-ref-bin' seed 11 step 60 repeats line" in err
