"""A short RL run on a testbed, with the group statistics that say whether credit assignment can matter.

    python benchmarks/testbed_sanity.py --config configs/arith_hard.yaml --method grpo --max_steps 30 \\
        --output_dir outputs/testbed-sanity [any psgrpo train flag]

It is ``psgrpo train`` (held-out accuracy before and after included) plus a callback that, after
every optimizer step, reads that step's generation batch (TRL keeps its prompts, completions and
per-function rewards for logging) and records in ``OUTPUT_DIR/group_stats.jsonl``:

* ``all_wrong`` / ``all_right`` / ``all_equal``: the share of groups whose correctness (the
  correctness reward at its exact value) is the same for every member
  (:func:`psgrpo.diagnostics.group_correctness`): outcome GRPO learns nothing about being right there;
* ``correctness_share`` / ``format_share``: which reward the outcome advantages A_i come from
  (:func:`psgrpo.diagnostics.reward_shares`, with the run's reward weights and ``scale_rewards``);
* ``unnecessary_steps``: the share of written steps whose result is never used
  (:func:`psgrpo.diagnostics.unnecessary_step_share`), and ``mean_chars`` of the completions.

At the end it prints the mean of each over consecutive windows of ``--window`` steps (default 10).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from psgrpo.commands.train import train
from psgrpo.diagnostics import group_correctness, reward_shares, unnecessary_step_share

STATS = (
    "all_wrong",
    "all_right",
    "all_equal",
    "correctness_share",
    "format_share",
    "unnecessary_steps",
    "mean_chars",
)


def batch_stats(trainer: Any) -> dict[str, float]:
    """Group statistics of the generation batch TRL last scored (all processes' rows, in group order)."""
    names = list(trainer.reward_func_names)
    completions = [c if isinstance(c, str) else c[-1]["content"] for c in trainer._logs["completion"]]
    rewards = torch.tensor([list(trainer._logs["rewards"][name]) for name in names], dtype=torch.float64).T
    correct = [
        bool(r == trainer.args.correctness_exact) for r in rewards[:, names.index("correctness_reward")]
    ]
    groups = group_correctness(correct, trainer.num_generations)
    shares = reward_shares(
        rewards, trainer.num_generations, names, trainer.reward_weights.tolist(), trainer.args.scale_rewards
    )
    return {
        "all_wrong": groups.all_wrong,
        "all_right": groups.all_right,
        "all_equal": groups.all_equal,
        "correctness_share": shares.get("correctness_reward", float("nan")),
        "format_share": shares.get("format_reward", float("nan")),
        "unnecessary_steps": unnecessary_step_share(completions),
        "mean_chars": statistics.fmean(len(c) for c in completions),
    }


class GroupStatsCallback(TrainerCallback):
    """After each optimizer step, append :func:`batch_stats` (and the step) to a JSONL file (main process)."""

    def __init__(self, trainer: Any, path: Path) -> None:
        self.trainer, self.path = trainer, path
        self.records: list[dict[str, float]] = []

    def on_step_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            record = {"step": state.global_step, **batch_stats(self.trainer)}
            self.records.append(record)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(json.dumps(record) + "\n")
        return control


def windows(records: Sequence[dict[str, float]], size: int) -> list[dict[str, float]]:
    """Means of every statistic over consecutive windows of ``size`` steps (NaN-free values only)."""
    out = []
    for start in range(0, len(records), size):
        chunk = records[start : start + size]
        row = {"steps": f"{chunk[0]['step']}-{chunk[-1]['step']}"}
        for key in STATS:
            values = [r[key] for r in chunk if r[key] == r[key]]
            row[key] = statistics.fmean(values) if values else float("nan")
        out.append(row)
    return out


def main(argv: Sequence[str]) -> dict[str, Any]:
    argv = list(argv)
    window = 10
    if "--window" in argv:
        i = argv.index("--window")
        window = int(argv[i + 1])
        del argv[i : i + 2]
    callbacks: list[GroupStatsCallback] = []

    def make_callback(trainer: Any) -> GroupStatsCallback:
        callbacks.append(GroupStatsCallback(trainer, Path(trainer.args.output_dir) / "group_stats.jsonl"))
        return callbacks[-1]

    report = train(argv, callbacks=[make_callback])
    table = windows(callbacks[0].records, window)
    print("\n| steps | " + " | ".join(STATS) + " |\n|" + "---|" * (len(STATS) + 1))
    for row in table:
        print(f"| {row['steps']} | " + " | ".join(f"{row[k]:.3f}" for k in STATS) + " |")
    report["group_stats"] = table
    return report


if __name__ == "__main__":
    main(sys.argv[1:])
