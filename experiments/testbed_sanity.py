"""A short RL run on a testbed, with the group statistics that say whether credit assignment can matter.

    python experiments/testbed_sanity.py --config configs/arith_hard.yaml --method grpo --max_steps 30 \\
        --output_dir outputs/testbed-sanity [--window 10] [any psgrpo train flag]
    python experiments/testbed_sanity.py --report RUN_DIR [--window 4]   # an existing run, e.g. a compare run

It is ``psgrpo train --diagnostics true --logging_steps 1`` (held-out accuracy before and after
included; :mod:`psgrpo.diagnostics.step_logger` defines the metrics), then a table of the means, over
consecutive windows of ``--window`` logged steps, of what ``metrics.jsonl`` recorded:

* ``all_wrong`` / ``all_right`` / ``all_equal``: the share of groups whose correctness is the same
  for every member (``diag/all_*_frac``): outcome GRPO learns nothing about being right there;
* ``correctness_share`` / ``format_share``: which reward the outcome advantages A_i come from;
* ``unnecessary_steps``: the share of written steps whose result is never used;
* ``mean_length``: completion tokens (TRL's ``completions/mean_length``; characters for the tiny model);
* ``reward_std_zero``: TRL's ``frac_reward_zero_std``, groups whose *summed* reward has no spread.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from typing import Any

from psgrpo.commands.train import train
from psgrpo.metrics_log import read_metrics

STATS = {
    "all_wrong": "diag/all_wrong_frac",
    "all_right": "diag/all_right_frac",
    "all_equal": "diag/all_equal_correct_frac",
    "correctness_share": "diag/reward_share/correctness_reward",
    "format_share": "diag/reward_share/format_reward",
    "unnecessary_steps": "diag/unnecessary_step_frac",
    "mean_length": "completions/mean_length",
    "reward_std_zero": "frac_reward_zero_std",
    "ps_process_share": "ps/process_share",
    "vps_process_share": "vps/process_share",
}
"""Column → the metrics.jsonl key it averages."""


def windows(records: Sequence[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """Means of every :data:`STATS` column over consecutive windows of ``size`` training records
    (records without the key, e.g. a step where a metric could not be measured, are left out)."""
    if size < 1:
        raise ValueError(f"--window must be at least 1, got {size}")
    train_records = [r for r in records if "diag/all_equal_correct_frac" in r]
    out = []
    for start in range(0, len(train_records), size):
        chunk = train_records[start : start + size]
        row: dict[str, Any] = {"steps": f"{chunk[0]['step']}-{chunk[-1]['step']}"}
        for column, key in STATS.items():
            values = [r[key] for r in chunk if key in r]
            row[column] = statistics.fmean(values) if values else float("nan")
        out.append(row)
    return out


def print_table(table: Sequence[dict[str, Any]]) -> None:
    print("\n| steps | " + " | ".join(STATS) + " |\n|" + "---|" * (len(STATS) + 1))
    for row in table:
        print(f"| {row['steps']} | " + " | ".join(f"{row[k]:.3f}" for k in STATS) + " |")


def _pop_option(argv: list[str], name: str) -> str | None:
    if name not in argv:
        return None
    i = argv.index(name)
    if i + 1 >= len(argv):
        raise ValueError(f"{name} needs a value")
    value = argv[i + 1]
    del argv[i : i + 2]
    return value


def main(argv: Sequence[str]) -> dict[str, Any]:
    argv = list(argv)
    window = int(_pop_option(argv, "--window") or 10)
    run_dir = _pop_option(argv, "--report")
    if run_dir is not None:  # an existing run (e.g. one of psgrpo compare's), no training
        records = read_metrics(run_dir)
        if not any("diag/all_equal_correct_frac" in r for r in records):
            raise ValueError(f"{run_dir}: no diag/* records in metrics.jsonl; train with --diagnostics true")
        report: dict[str, Any] = {"output_dir": run_dir}
    else:
        report = train([*argv, "--diagnostics", "true", "--logging_steps", "1"])
        records = read_metrics(report["output_dir"])
    table = windows(records, window)
    print_table(table)
    report["group_stats"] = table
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
