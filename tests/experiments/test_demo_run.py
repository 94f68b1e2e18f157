"""experiments/demo_run.py: the embedded demo end to end, as one markdown row (accuracies, times)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_demo_row_reports_the_run_it_trained(import_experiment, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(
        tmp_path
    )  # no --output_dir: the run goes to a new ./outputs/bench-demo/<UTC time>-<pid>
    flags = ["--method", "grpo", "--max_steps", "1", "--per_device_train_batch_size", "8",
             "--max_completion_length", "16", "--max_eval_examples", "4", "--eval_batch_size", "4",
             "--report_to", "none", "--save_strategy", "no"]  # fmt: skip
    import_experiment("demo_run").main(flags)
    (run,) = (tmp_path / "outputs" / "bench-demo").iterdir()
    assert (run / "report.json").is_file()
    header, rule, row = capsys.readouterr().out.strip().splitlines()[-3:]
    assert header.startswith("| method | flags | acc before | acc after |") and rule.startswith("|---|")
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert (
        cells[0] == "grpo" and cells[1] == f"`--output_dir outputs/bench-demo/{run.name} {' '.join(flags)}`"
    )
    before, after, delta, format_rate, train_s, wall_s = map(float, cells[2:])
    assert 0 <= before <= 1 and 0 <= after <= 1 and 0 <= format_rate <= 1
    assert delta == pytest.approx(100 * (after - before), abs=0.051)  # points, one decimal
    assert 0 <= train_s <= wall_s
