"""benchmarks/testbed_sanity.py: psgrpo train plus per-step group statistics, on a shortened demo run."""

from __future__ import annotations

import json
import math

import pytest


@pytest.fixture(scope="module")
def sanity(import_benchmark):
    return import_benchmark("testbed_sanity")


def test_windows_average_each_statistic(sanity):
    records = [{"step": s, **dict.fromkeys(sanity.STATS, float(s))} for s in range(1, 6)]
    records[1]["unnecessary_steps"] = math.nan  # a step without equations is left out
    rows = sanity.windows(records, 2)
    assert [r["steps"] for r in rows] == ["1-2", "3-4", "5-5"]
    assert (
        rows[0]["all_wrong"] == 1.5 and rows[0]["unnecessary_steps"] == 1.0 and rows[2]["format_share"] == 5.0
    )


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
    records = [json.loads(line) for line in (out / "group_stats.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2]
    for record in records:
        assert record["all_equal"] == pytest.approx(record["all_wrong"] + record["all_right"])
        assert 0.0 <= record["all_equal"] <= 1.0 and record["mean_chars"] > 0
        if not math.isnan(record["correctness_share"]):
            assert record["correctness_share"] + record["format_share"] == pytest.approx(1.0)
    assert len(report["group_stats"]) == 2 and "| steps | all_wrong" in capsys.readouterr().out
