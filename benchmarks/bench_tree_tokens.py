"""Tokens generated per group and step time of ``--method tree`` against ``grpo`` at the same G, on the embedded default.

    python benchmarks/bench_tree_tokens.py [--steps 5] [--rounds 2] [--batch 32] [--tree_branching 2 2 2]
        [--tree_segment_tokens S] [--tree_boundaries tokens|lines|entropy]

Each round trains ``grpo`` and ``tree`` for ``--steps`` steps from the embedded checkpoint with the
demo recipe (G = 8, completions up to 128 tokens) and ``--batch`` completions per step, each run in
a fresh subprocess, alternating the two so that machine noise hits both alike. ``grpo`` generates
G × (mean completion length) tokens per group; ``tree`` logs what it generated
(``tree/tokens_generated``: shared prefixes once) and its ratio to G × its own mean leaf length
(``tree/token_ratio``). Medians over steps (the first dropped as warm-up), then over rounds.
About 1–2 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from typing import get_args

import torch
from _common import logged_medians, markdown_table, recipe_configs, run_isolated

from psgrpo.config.options import TreeBoundaries
from psgrpo.data.tasks import load_task_split
from psgrpo.loading import load_model_and_tokenizer
from psgrpo.trainer import ProcessGRPOTrainer


def run(method: str, steps: int, batch: int, tree: dict, output_dir: str) -> dict[str, float]:
    """``steps`` training steps of ``method``: median step time, mean leaf length and tokens generated per group."""
    overrides = {
        "max_steps": steps,
        "per_device_train_batch_size": batch,
        **(tree if method == "tree" else {}),
    }
    task, args = recipe_configs(method, output_dir, **overrides)
    torch.manual_seed(args.seed)
    model, tokenizer = load_model_and_tokenizer(None)
    trainer = ProcessGRPOTrainer(
        model=model, args=args, train_dataset=load_task_split(task, "train"), processing_class=tokenizer
    )
    trainer.train()
    medians = logged_medians(trainer.state.log_history)
    logs = [log for log in trainer.state.log_history if "step_time" in log][1:]
    G = args.num_generations
    if method == "tree":
        generated = statistics.median(log["tree/tokens_generated"] for log in logs)
        ratio = statistics.median(log["tree/token_ratio"] for log in logs)
    else:
        generated, ratio = G * medians["tokens"], 1.0
    return {
        "step_time": medians["step_time"],
        "tokens": medians["tokens"],
        "generated": generated,
        "ratio": ratio,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32, help="completions per step (multiple of G = 8)")
    parser.add_argument("--tree_branching", type=int, nargs="+", default=None, help="default: 2 2 2")
    parser.add_argument(
        "--tree_segment_tokens", type=int, default=None, help="default: 128 // (2·(levels − 1))"
    )
    parser.add_argument(
        "--tree_boundaries", choices=get_args(TreeBoundaries), default=None, help="default: tokens"
    )
    cli = parser.parse_args()
    tree = {
        k: v
        for k, v in (
            ("tree_branching", cli.tree_branching),
            ("tree_segment_tokens", cli.tree_segment_tokens),
            ("tree_boundaries", cli.tree_boundaries),
        )
        if v is not None
    }
    results: dict[str, list[dict[str, float]]] = {"grpo": [], "tree": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(cli.rounds):
            for method in results:
                results[method].append(
                    run_isolated(run, method, cli.steps, cli.batch, tree, f"{tmp}/{method}")
                )
    medians = {m: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for m, runs in results.items()}
    base = medians["grpo"]
    rows = [
        [
            method,
            f"{m['tokens']:.1f}",
            f"{m['generated']:.0f}",
            f"{m['generated'] / base['generated']:.3f}×",
            f"{m['ratio']:.3f}",
            f"{m['step_time']:.3f}",
            f"{m['step_time'] / base['step_time']:.3f}×",
        ]
        for method, m in medians.items()
    ]
    print(
        f"\n{cli.rounds} rounds × {cli.steps} steps, {cli.batch} completions per step, tree {tree or 'defaults'}:\n"
    )
    headers = [
        "method",
        "mean completion length",
        "tokens generated / group",
        "vs grpo",
        "vs G × own mean length",
        "step time (s)",
        "vs grpo",
    ]
    print(markdown_table(headers, rows))


if __name__ == "__main__":
    main()
