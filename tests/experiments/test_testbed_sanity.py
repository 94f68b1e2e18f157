"""experiments/testbed_sanity.py: psgrpo train plus per-step group statistics, on a shortened demo run."""

from __future__ import annotations

import json
import math

import pytest


@pytest.fixture(scope="module")
def sanity(import_experiment):
    return import_experiment("testbed_sanity")


def test_windows_average_each_statistic(sanity):
    records = [{"step": s, **{key: float(s) for key in sanity.STATS.values()}} for s in range(1, 6)]
    del records[1]["diag/unnecessary_step_frac"]  # a step without equations has no such metric
    records.insert(2, {"step": 2, "heldout/accuracy": 0.5})  # not a training record
    rows = sanity.windows(records, 2)
    assert [r["steps"] for r in rows] == ["1-2", "3-4", "5-5"]
    assert (
        rows[0]["all_wrong"] == 1.5 and rows[0]["unnecessary_steps"] == 1.0 and rows[2]["format_share"] == 5.0
    )
    with pytest.raises(ValueError, match="--window must be at least 1, got 0"):
        sanity.windows(records, 0)


def test_report_reads_an_existing_run_without_training(sanity, tmp_path, capsys):
    records = [{"step": s, "diag/all_equal_correct_frac": 0.5, "ps/process_share": s / 20} for s in (5, 10)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    report = sanity.main(["--report", str(tmp_path), "--window", "2"])
    assert [(r["steps"], r["ps_process_share"]) for r in report["group_stats"]] == [("5-10", 0.375)]
    assert "| 5-10 | " in capsys.readouterr().out
    with pytest.raises(
        ValueError, match="no diag/\\* records in metrics.jsonl; train with --diagnostics true"
    ):
        sanity.main(["--report", str(tmp_path / "missing")])


@pytest.mark.slow
def test_sanity_run_records_group_statistics_every_step(sanity, tmp_path, capsys):
    out = tmp_path / "run"
    report = sanity.main(
        [
            "--output_dir", str(out), "--max_steps", "2", "--per_device_train_batch_size", "16",
            "--max_completion_length", "48", "--eval_before_after", "false", "--report_to", "none",
            "--save_strategy", "no", "--method", "grpo", "--window", "1",
        ]
    )  # fmt: skip
    rows = report["group_stats"]
    assert [r["steps"] for r in rows] == ["1-1", "2-2"]
    for row in rows:
        assert row["all_equal"] == pytest.approx(row["all_wrong"] + row["all_right"])
        assert 0.0 <= row["all_equal"] <= 1.0 and row["mean_length"] > 0
        if not math.isnan(row["correctness_share"]):
            assert row["correctness_share"] + row["format_share"] == pytest.approx(1.0)
    assert "| steps | all_wrong" in capsys.readouterr().out
