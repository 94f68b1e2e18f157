"""experiments/run_trends.py: the exploratory figures of a kept comparison between two evaluation steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from psgrpo.compare.intervals import mean_interval
from psgrpo.compare.report import read_curves_csv, write_curves_csv

KEPT = Path(__file__).resolve().parents[2] / "experiments" / "runs" / "hard-240-confirm"


@pytest.fixture(scope="module")
def trends(import_experiment):
    return import_experiment("run_trends")


def _folder(tmp_path: Path) -> Path:
    """Two arms, three seeds, accuracy at steps 0/10/20; one run's metrics.jsonl."""
    accuracy = {  # (arm, seed) → accuracy at steps 10 and 20
        ("grpo", 1): (0.30, 0.35), ("grpo", 2): (0.28, 0.30), ("grpo", 3): (0.31, 0.36),
        ("ps", 1): (0.34, 0.36), ("ps", 2): (0.33, 0.30), ("ps", 3): (0.32, 0.40),
    }  # fmt: skip
    rows = [
        {"method": arm, "seed": seed, "step": step, "accuracy": value}
        for (arm, seed), (at10, at20) in accuracy.items()
        for step, value in ((0, 0.2), (10, at10), (20, at20))
    ]
    write_curves_csv(rows, tmp_path / "curves.csv")
    run = tmp_path / "runs" / "ps-seed1"
    run.mkdir(parents=True)
    records = [{"step": 0, "heldout/accuracy": 0.2}] + [{"step": s, "m": s / 100} for s in (5, 10, 15, 20)]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (run / "report.json").write_text("{}")  # finished
    return tmp_path


def test_gains_and_the_lead_change_by_hand(trends, tmp_path, capsys):
    folder = _folder(tmp_path)
    argv = [str(folder), "--treatment", "ps", "--from_step", "10", "--to_step", "20",
            "--metric", "m", "--windows", "5-10", "15-20", "30-40"]  # fmt: skip
    assert trends.main(argv) == 0
    out = capsys.readouterr().out
    control = [5.0, 2.0, 5.0]  # points, seeds 1-3
    treatment = [2.0, -3.0, 8.0]
    for name, values in (
        ("grpo gain", control),
        ("ps gain", treatment),
        ("lead change", [t - c for t, c in zip(treatment, control, strict=True)]),
    ):
        interval = mean_interval(values)
        line = next(row for row in out.splitlines() if row.startswith(f"| {name} |"))
        assert f"{interval.mean:+.1f} [{interval.low:+.1f}, {interval.high:+.1f}]" in line
        assert line.endswith(", ".join(f"{v:+.1f}" for v in values) + " |")
    # the metric's mean over each window's logged steps (none in 30-40), and its last value
    assert "| ps-seed1 | 0.075 | 0.175 | — | 0.200 |" in out


def test_the_kept_240_step_comparison_gives_its_readmes_figures(trends, capsys):
    argv = [str(KEPT), "--treatment", "ps-ref-bin", "--from_step", "120", "--to_step", "240",
            "--metric", "diag/unnecessary_step_frac", "--windows", "105-200", "205-240"]  # fmt: skip
    assert trends.main(argv) == 0
    out = capsys.readouterr().out
    assert "| grpo gain | +2.8 [+2.0, +3.6] |" in out and "| ps-ref-bin gain | +1.7 [-1.9, +5.3] |" in out
    assert "| lead change | -1.1 [-5.1, +2.9] |" in out
    assert "| ps-ref-bin-seed39 | 0.107 | 0.384 | 0.634 |" in out
    assert "| ps-ref-bin-seed42 | 0.097 | 0.161 | 0.236 |" in out
    argv[argv.index("diag/unnecessary_step_frac")] = "ps/frac_steps_no_equation"  # the steps it cannot read
    assert trends.main(argv) == 0
    out = capsys.readouterr().out
    assert "| ps-ref-bin-seed39 | 0.010 | 0.107 | 0.231 |" in out and "| grpo-seed39 | — | — | — |" in out


def test_a_folder_of_one_arm_gives_the_metric_table_only(trends, capsys):
    """hard-240-garbled: the two seeds that drifted, rerun with the garbled-equation rule (no curves.csv)."""
    folder = KEPT.parent / "hard-240-garbled"
    assert trends.main([str(folder), "--metric", "heldout/accuracy", "--windows", "120-120", "240-240"]) == 0
    out = capsys.readouterr().out
    assert "lead change" not in out
    assert (
        "| ps-ref-bin-seed39 | 0.305 | 0.332 | 0.332 |" in out
        and "| ps-ref-bin-seed42 | 0.301 | 0.321 | 0.321 |" in out
    )
    assert (
        trends.main([str(folder), "--metric", "ps/frac_steps_no_equation", "--windows", "105-200", "205-240"])
        == 0
    )
    assert "| ps-ref-bin-seed39 | 0.005 | 0.007 | 0.009 |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        trends.main([str(folder)])
    assert "without --treatment there is only the metric table" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--from_step", "20", "--to_step", "10"], "--from_step 20 must come before --to_step 10"),
        (["--from_step", "10", "--to_step", "20", "--windows", "9-3"], "'9-3': expected 0 <= FIRST <= LAST"),
        (["--from_step", "10", "--to_step", "20", "--metric", "m"], "--metric needs --windows"),
        (["--from_step", "10", "--to_step", "30"], "fewer than 2 seeds have both 'ps' and 'grpo'"),
    ],
)
def test_bad_input_is_one_line(trends, tmp_path, capsys, extra, message):
    with pytest.raises(SystemExit) as exit_info:
        trends.main([str(_folder(tmp_path)), "--treatment", "ps", *extra])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_left_out_seed_an_unfinished_run_and_a_cut_line_are_named(trends, tmp_path, capsys):
    """Found by a review (2026-12-07): a seed missing a step was dropped without a word, a run still training
    entered the metric table, and a cut metrics.jsonl line ended in an unnamed JSON error."""
    folder = _folder(tmp_path)
    rows = read_curves_csv(folder / "curves.csv")
    write_curves_csv([r for r in rows if not (r["seed"] == 2 and r["step"] == 20)], folder / "curves.csv")
    training = folder / "runs" / "grpo-seed1"
    training.mkdir()
    (training / "metrics.jsonl").write_text('{"step": 5, "m": 0.1}\n')
    argv = [str(folder), "--treatment", "ps", "--from_step", "10", "--to_step", "20", "--metric", "m",
            "--windows", "5-10"]  # fmt: skip
    assert trends.main(argv) == 0
    out = capsys.readouterr().out
    assert "Left out (an arm lacks step 10 or 20): seeds 2." in out
    assert "| grpo-seed1 | unfinished (no report.json) |" in out
    with (folder / "runs" / "ps-seed1" / "metrics.jsonl").open("a") as f:
        f.write('{"step": 25, "m": 0.')  # a run killed mid-write
    with pytest.raises(SystemExit):
        trends.main(argv)
    assert "ps-seed1/metrics.jsonl, line 6: not a JSON record" in capsys.readouterr().err
